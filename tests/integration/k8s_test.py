"""The Kubernetes manifests (deploy/k8s) and container files (deploy/containers) check out.

- Schemas: every manifest validates against the Kubernetes schemas of kubernetes-validate
  (pinned in scripts/setup.sh; strict, so an unknown field fails) for the oldest and the newest
  Kubernetes release we aim at. KEDA's ScaledObjects, which those schemas lack, validate against
  the ScaledObject schema of KEDA's CRD (keda.sh/v1alpha1, trimmed below and made strict), their
  PromQL passes `promtool check rules`, and the series they read is the server's queue gauge.
- Consistency: every Secret, ConfigMap and key a pod reads is defined (kustomize generators
  included), every file path a container is given lies in a mounted volume that holds it,
  selectors of workloads, Services, the PodDisruptionBudget, NetworkPolicies and ScaledObjects
  select what they mean to and nothing else, container ports match the flags, the probes ask
  the gRPC port, each open port is let in by a NetworkPolicy (the server's gRPC port only for
  workers and clients), pods meet the restricted Pod Security Standard.
- Live: the servers' and the CPU worker's arguments, environment and mounted files from the
  manifests (certificates from make-secrets.sh; SQLite instead of PostgreSQL) run as a real farm
  on loopback: the probe passes on the leader (SERVING) and on the standby, the worker registers
  over TLS with a worker token, the leader exports the series the autoscaler reads, and once the
  leader stops the standby serves (and exports it).
- Where kustomize or kubectl is installed, the kustomization builds and what it renders passes
  the same checks; every flag is in its binary's usage text; the README says how to create the
  one Secret kustomize does not.
- Container files: a Debian 12 build stage and a debian:12-slim final stage, a non-root USER,
  an ENTRYPOINT that runs the binary, a build that copies every source directory CMake needs,
  and a final stage that installs every Debian package the built binary's shared libraries come
  from (ldd, dpkg -S, and the dependency closure of the installed packages).
A checker that finds nothing wrong proves little: CheckersCatchBreakageTest breaks a copy of the
manifests in several ways and expects each checker to say so."""
import copy
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import yaml

from farm import CLIENT, RUN, SERVER, SOURCE_DIR, WORKER, free_port, stop_processes, scratch_dir

# kubernetes-validate and its pinned dependencies (scripts/setup.sh --tests).
sys.path.insert(0, os.path.join(SOURCE_DIR, ".deps", "k8s"))
try:
    import jsonschema
    import kubernetes_validate
except ImportError as error:  # reported by the tests that need them
    kubernetes_validate = None
    IMPORT_ERROR = str(error)

K8S = os.path.join(SOURCE_DIR, "deploy", "k8s")
CONTAINERS = os.path.join(SOURCE_DIR, "deploy", "containers")
PROBE = os.path.join(CONTAINERS, "gtco-server-probe")
# The oldest release the manifests need (PodDisruptionBudget.unhealthyPodEvictionPolicy is GA in
# 1.31) and the newest whose schemas kubernetes-validate bundles.
KUBERNETES_VERSIONS = ("1.31.0", "1.37.0")
# Secrets the operator creates with kubectl (README), not kustomize: the worker token can only be
# issued by the running farm.
OPERATOR_SECRETS = {"gtco-worker-token": {"token"}}
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
QUEUE_METRIC = "gtco_queue_depth"
# Container file -> (the binary its ENTRYPOINT runs, the built binaries it ships).
IMAGES = {
    "Containerfile.server": ("gtco-server", (SERVER, CLIENT)),
    "Containerfile.worker": ("gtco-worker", (WORKER,)),
    "Containerfile.worker-cuda": ("gtco-worker", (WORKER,)),
    "Containerfile.client": ("gtco-client", (CLIENT,)),
    "Containerfile.run": ("gtco-run", (RUN,)),
}
# The image names the manifests use -> the container file that builds each.
MANIFEST_IMAGES = {"gtco-server": "Containerfile.server", "gtco-worker": "Containerfile.worker",
                   "gtco-worker-cuda": "Containerfile.worker-cuda"}


def _object(properties, required=()):
    """A strict object schema (kubectl --validate=strict rejects unknown fields)."""
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


_INT = {"type": "integer"}
_SCALING_RULES = _object({
    "stabilizationWindowSeconds": {"type": "integer", "minimum": 0, "maximum": 3600},
    "selectPolicy": {"enum": ["Max", "Min", "Disabled"]},
    "policies": {"type": "array", "items": _object({
        "type": {"enum": ["Pods", "Percent"]}, "value": {"type": "integer", "minimum": 1},
        "periodSeconds": {"type": "integer", "minimum": 1, "maximum": 1800}},
        ("type", "value", "periodSeconds"))},
})
# The spec of KEDA's ScaledObject (keda.sh/v1alpha1), trimmed from the CRD's openAPIV3Schema in
# kedacore/keda config/crd/bases/keda.sh_scaledobjects.yaml (Apache-2.0): descriptions and the
# status dropped, objects made strict, enums from the field descriptions.
SCALED_OBJECT_SCHEMA = _object({
    "apiVersion": {"const": "keda.sh/v1alpha1"},
    "kind": {"const": "ScaledObject"},
    "metadata": {"type": "object", "required": ["name"]},
    "spec": _object({
        "scaleTargetRef": _object({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                   "name": {"type": "string"},
                                   "envSourceContainerName": {"type": "string"}}, ("name",)),
        "pollingInterval": _INT, "cooldownPeriod": _INT, "initialCooldownPeriod": _INT,
        "idleReplicaCount": _INT, "minReplicaCount": _INT, "maxReplicaCount": _INT,
        "fallback": _object({"failureThreshold": _INT, "replicas": _INT},
                            ("failureThreshold", "replicas")),
        "advanced": _object({
            "restoreToOriginalReplicaCount": {"type": "boolean"},
            "horizontalPodAutoscalerConfig": _object({
                "name": {"type": "string"},
                "behavior": _object({"scaleUp": _SCALING_RULES, "scaleDown": _SCALING_RULES}),
            }),
        }),
        "triggers": {"type": "array", "minItems": 1, "items": _object({
            "type": {"type": "string"}, "name": {"type": "string"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
            "authenticationRef": _object({"name": {"type": "string"},
                                          "kind": {"type": "string"}}, ("name",)),
            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
        }, ("type", "metadata"))},
    }, ("scaleTargetRef", "triggers")),
}, ("apiVersion", "kind", "metadata", "spec"))


# ----------------------------------------------------------------------------------------------
# Loading


def load_kustomization():
    with open(os.path.join(K8S, "kustomization.yaml")) as file:
        return yaml.safe_load(file)


def load_manifests(kustomization):
    """[(file name, document)] of every resource the kustomization lists."""
    documents = []
    for name in kustomization.get("resources", []):
        with open(os.path.join(K8S, name)) as file:
            documents.extend((name, doc) for doc in yaml.safe_load_all(file) if doc)
    return documents


def where(name, doc):
    return f"{name}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def run_make_secrets(directory):
    """Runs deploy/k8s/make-secrets.sh into `directory` (the files the generators read)."""
    result = subprocess.run([os.path.join(K8S, "make-secrets.sh")], capture_output=True,
                            text=True, timeout=120,
                            env=dict(os.environ, GTCO_SECRETS_DIR=directory))
    if result.returncode != 0:
        raise AssertionError(f"make-secrets.sh exited {result.returncode}:\n{result.stderr}")


def read_env_file(path):
    """A kustomize `envs` file: KEY=VALUE lines."""
    values = {}
    with open(path) as file:
        for line in file:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                values[key] = value
    return values


def generated_objects(kustomization, secrets_dir):
    """{(kind, name): {key: ("file", path) or ("literal", value)}} of the kustomization's
    generators, with the files they read taken from `secrets_dir` in place of
    deploy/k8s/secrets/."""
    def local(path):
        return os.path.join(secrets_dir, path[len("secrets/"):]) if path.startswith(
            "secrets/") else os.path.join(K8S, path)

    objects = {}
    for kind, section in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for generator in kustomization.get(section, []):
            data = {}
            for literal in generator.get("literals", []):
                key, _, value = literal.partition("=")
                data[key] = ("literal", value)
            for entry in generator.get("files", []):
                key, _, path = entry.rpartition("=")
                data[key or os.path.basename(path)] = ("file", local(path))
            for path in generator.get("envs", []):
                if os.path.exists(local(path)):
                    for key, value in read_env_file(local(path)).items():
                        data[key] = ("literal", value)
                else:
                    data["?" + path] = ("file", local(path))
            objects[(kind, generator["name"])] = data
    return objects


def workloads(documents):
    return [(name, doc) for name, doc in documents if doc.get("kind") in WORKLOAD_KINDS]


def pod_template(doc):
    return doc["spec"]["template"]


def containers_of(doc):
    spec = pod_template(doc)["spec"]
    return spec.get("initContainers", []) + spec.get("containers", [])


def labels_match(selector, labels):
    """A label selector (matchLabels and matchExpressions) against a set of labels."""
    if "matchLabels" in selector or "matchExpressions" in selector:
        match_labels = selector.get("matchLabels", {})
        expressions = selector.get("matchExpressions", [])
    else:  # a Service's plain map
        match_labels, expressions = selector, []
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    for expression in expressions:
        key, operator, values = expression["key"], expression["operator"], expression.get(
            "values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def selected_workloads(documents, selector):
    return [doc for _, doc in workloads(documents)
            if labels_match(selector, pod_template(doc)["metadata"].get("labels", {}))]


def flag_values(args):
    """{flag: value} of `--flag value` / `--flag=value` arguments (boolean flags: True)."""
    values = {}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("--"):
            if "=" in arg:
                key, _, value = arg[2:].partition("=")
                values[key] = value
            elif index + 1 < len(args) and not args[index + 1].startswith("--"):
                values[arg[2:]] = args[index + 1]
                index += 1
            else:
                values[arg[2:]] = True
        index += 1
    return values


def find(documents, kind, name):
    for _, doc in documents:
        if doc.get("kind") == kind and doc["metadata"]["name"] == name:
            return doc
    return None


def container_named(doc, name):
    for container in containers_of(doc):
        if container["name"] == name:
            return container
    raise AssertionError(f"{doc['kind']}/{doc['metadata']['name']} has no container {name}")


def server_parts(documents):
    """The server's StatefulSet, its container, its flags and its gRPC and HTTP ports."""
    server = find(documents, "StatefulSet", "gtco-server")
    if server is None:
        raise AssertionError("no StatefulSet gtco-server in the manifests")
    container = container_named(server, "server")
    flags = flag_values(container.get("args", []))
    grpc_port = int(str(flags["listen"]).rsplit(":", 1)[1])
    http_port = int(flags.get("metrics-port", flags.get("http-port", -1)))
    return server, container, flags, grpc_port, http_port


def worker_deployments(documents):
    return [doc for _, doc in workloads(documents)
            if pod_template(doc)["metadata"]["labels"].get("app.kubernetes.io/component") ==
            "worker"]


# ----------------------------------------------------------------------------------------------
# Checkers: each returns a list of problems, one line each, naming the file and object.


def schema_problems(documents):
    problems = []
    for name, doc in documents:
        if doc.get("apiVersion") == "keda.sh/v1alpha1":
            continue  # keda_problems
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                path = ".".join(str(part) for part in error.path)
                problems.append(f"{where(name, doc)} (Kubernetes {error.version}): "
                                f"{path}: {error.message}")
            except kubernetes_validate.SchemaNotFoundError as error:
                problems.append(f"{where(name, doc)}: {error.message}")
    return problems


def keda_problems(documents, promtool=None):
    """ScaledObjects: KEDA's schema, a Deployment without a replica count of its own as the
    target, the Prometheus trigger's query on the queue gauge of the target's --target, and
    (with promtool) PromQL that parses."""
    problems = []
    validator = jsonschema.Draft202012Validator(SCALED_OBJECT_SCHEMA)
    queries = []
    for name, doc in documents:
        if doc.get("kind") != "ScaledObject":
            continue
        at = where(name, doc)
        errors = sorted(validator.iter_errors(doc), key=lambda error: list(error.path))
        for error in errors:
            path = ".".join(str(part) for part in error.path)
            problems.append(f"{at} (KEDA ScaledObject schema): {path}: {error.message}")
        if errors:
            continue
        spec = doc["spec"]
        target_ref = spec["scaleTargetRef"]
        kind = target_ref.get("kind", "Deployment")
        target = find(documents, kind, target_ref["name"])
        if target is None:
            problems.append(f"{at}: scaleTargetRef names {kind}/{target_ref['name']}, which the "
                            "manifests do not define")
            continue
        if "replicas" in target["spec"]:
            problems.append(f"{at}: {kind}/{target_ref['name']} sets spec.replicas, which every "
                            "kubectl apply would reset under the autoscaler")
        if spec.get("minReplicaCount", 0) > spec.get("maxReplicaCount", 100):
            problems.append(f"{at}: minReplicaCount > maxReplicaCount")
        worker_target = None
        for container in containers_of(target):
            worker_target = flag_values(container.get("args", [])).get("target", worker_target)
        for trigger in spec["triggers"]:
            if trigger["type"] != "prometheus":
                problems.append(f"{at}: trigger type {trigger['type']}: only prometheus "
                                "(the queue depth) is expected")
                continue
            metadata = trigger["metadata"]
            for key in ("serverAddress", "query", "threshold"):
                if key not in metadata:
                    problems.append(f"{at}: the prometheus trigger lacks metadata.{key}")
            if not re.match(r"^https?://[^/\s]+", metadata.get("serverAddress", "")):
                problems.append(f"{at}: serverAddress {metadata.get('serverAddress')!r} is not "
                                "an http(s) URL")
            for key in ("threshold", "activationThreshold"):
                if key in metadata:
                    try:
                        if float(metadata[key]) < 0 or (key == "threshold" and
                                                        float(metadata[key]) == 0):
                            raise ValueError
                    except ValueError:
                        problems.append(f"{at}: {key} {metadata[key]!r} is not a positive number")
            query = metadata.get("query", "")
            selector = re.search(QUEUE_METRIC + r"\{([^}]*)\}", query)
            if not selector:
                problems.append(f"{at}: the query {query!r} does not read {QUEUE_METRIC}{{...}}")
                continue
            labels = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', selector.group(1)))
            if labels.get("target") != worker_target:
                problems.append(f"{at}: the query reads target={labels.get('target')!r} but "
                                f"{kind}/{target_ref['name']} runs --target {worker_target}")
            queries.append((at, query))
    if promtool and queries:
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as rules:
            yaml.safe_dump({"groups": [{"name": "keda", "rules": [
                {"record": f"keda:query_{index}", "expr": query}
                for index, (_, query) in enumerate(queries)]}]}, rules)
        try:
            result = subprocess.run([promtool, "check", "rules", rules.name],
                                    capture_output=True, text=True, timeout=60)
            if result.returncode != 0:
                problems.append("ScaledObject queries fail `promtool check rules`: " +
                                (result.stdout + result.stderr).strip())
        finally:
            os.unlink(rules.name)
    return problems


def reference_problems(documents, generated):
    """Secrets, ConfigMaps and keys pods read; ServiceAccounts; files named in args and probes."""
    defined = {key: set(data) for key, data in generated.items()}
    for _, doc in documents:
        if doc.get("kind") in ("Secret", "ConfigMap"):
            keys = set(doc.get("data", {})) | set(doc.get("stringData", {}))
            defined[(doc["kind"], doc["metadata"]["name"])] = keys
    for name, keys in OPERATOR_SECRETS.items():
        defined[("Secret", name)] = set(keys)
    service_accounts = {doc["metadata"]["name"] for _, doc in documents
                        if doc.get("kind") == "ServiceAccount"}
    problems = []

    def need(at, kind, name, key=None):
        if (kind, name) not in defined:
            problems.append(f"{at}: reads {kind} {name}, which neither the manifests nor the "
                            "kustomization's generators define")
        elif key is not None and key not in defined[(kind, name)]:
            problems.append(f"{at}: reads key {key!r} of {kind} {name}, which has only "
                            f"{sorted(defined[(kind, name)])}")

    for name, doc in workloads(documents):
        at = where(name, doc)
        spec = pod_template(doc)["spec"]
        account = spec.get("serviceAccountName", "default")
        if account not in service_accounts:
            problems.append(f"{at}: serviceAccountName {account} is not defined")
        volumes = {}
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                source = ("Secret", volume["secret"]["secretName"], volume["secret"])
            elif "configMap" in volume:
                source = ("ConfigMap", volume["configMap"]["name"], volume["configMap"])
            else:
                continue
            kind, source_name, fields = source
            need(f"{at} volume {volume['name']}", kind, source_name)
            items = fields.get("items")
            keys = {item["path"]: item["key"] for item in items} if items else None
            for item in items or []:
                need(f"{at} volume {volume['name']}", kind, source_name, item["key"])
            volumes[volume["name"]] = (kind, source_name, keys)
        for container in containers_of(doc):
            where_container = f"{at} container {container['name']}"
            for env in container.get("env", []):
                value_from = env.get("valueFrom", {})
                if "secretKeyRef" in value_from:
                    ref = value_from["secretKeyRef"]
                    need(f"{where_container} env {env['name']}", "Secret", ref["name"], ref["key"])
                if "configMapKeyRef" in value_from:
                    ref = value_from["configMapKeyRef"]
                    need(f"{where_container} env {env['name']}", "ConfigMap", ref["name"],
                         ref["key"])
            for env_from in container.get("envFrom", []):
                if "secretRef" in env_from:
                    need(where_container, "Secret", env_from["secretRef"]["name"])
                if "configMapRef" in env_from:
                    need(where_container, "ConfigMap", env_from["configMapRef"]["name"])
            mounts = {mount["mountPath"].rstrip("/"): mount["name"]
                      for mount in container.get("volumeMounts", [])}
            for mount_name in mounts.values():
                if mount_name not in {v["name"] for v in spec.get("volumes", [])} and not any(
                        t["metadata"]["name"] == mount_name
                        for t in doc["spec"].get("volumeClaimTemplates", [])):
                    problems.append(f"{where_container}: mounts volume {mount_name}, which the "
                                    "pod does not define")
            # Every file under /etc/ the container is told about must be a key of a mounted
            # Secret or ConfigMap.
            words = list(container.get("args", [])) + list(container.get("command", []))
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                words += container.get(probe, {}).get("exec", {}).get("command", [])
            for word in words:
                if not str(word).startswith("/etc/"):
                    continue
                directory, _, file_name = str(word).rpartition("/")
                if directory not in mounts:
                    problems.append(f"{where_container}: {word} is in no mounted volume")
                    continue
                if mounts[directory] in volumes:
                    kind, source_name, keys = volumes[mounts[directory]]
                    key = keys.get(file_name) if keys is not None else file_name
                    need(f"{where_container} file {word}", kind, source_name, key)
    return problems


def selector_problems(documents):
    """Workloads, Services, PodDisruptionBudgets, NetworkPolicies: who selects whom."""
    problems = []
    pods = [(name, doc, pod_template(doc)["metadata"].get("labels", {}))
            for name, doc in workloads(documents)]
    for name, doc, labels in pods:
        at = where(name, doc)
        if not labels_match(doc["spec"]["selector"], labels):
            problems.append(f"{at}: spec.selector does not match its pod template's labels")
        for other_name, other, other_labels in pods:
            if other is not doc and labels_match(doc["spec"]["selector"], other_labels):
                problems.append(f"{at}: spec.selector also matches the pods of "
                                f"{where(other_name, other)}")
        if doc["kind"] == "StatefulSet":
            service = find(documents, "Service", doc["spec"].get("serviceName", ""))
            if service is None:
                problems.append(f"{at}: serviceName {doc['spec'].get('serviceName')} is not a "
                                "Service of the manifests")
            elif service["spec"].get("clusterIP") != "None" or not labels_match(
                    service["spec"].get("selector", {}), labels):
                problems.append(f"{at}: its serviceName must be a headless Service that "
                                "selects its pods")
    for name, doc in documents:
        at = where(name, doc)
        kind = doc.get("kind")
        if kind == "Service":
            selected = selected_workloads(documents, doc["spec"].get("selector", {}))
            if not selected:
                problems.append(f"{at}: its selector matches no workload's pods")
            for port in doc["spec"].get("ports", []):
                target = port.get("targetPort", port["port"])
                for workload in selected:
                    container_ports = [p for c in containers_of(workload)
                                       for p in c.get("ports", [])]
                    if not any(p.get("name") == target or p["containerPort"] == target
                               for p in container_ports):
                        problems.append(f"{at}: port {port.get('name')} targets {target!r}, "
                                        f"which {workload['kind']}/"
                                        f"{workload['metadata']['name']} does not expose")
        if kind == "PodDisruptionBudget":
            selected = selected_workloads(documents, doc["spec"]["selector"])
            if not selected:
                problems.append(f"{at}: its selector matches no workload's pods")
            replicas = sum(w["spec"].get("replicas", 1) for w in selected)
            min_available = doc["spec"].get("minAvailable")
            if isinstance(min_available, int) and min_available >= replicas:
                problems.append(f"{at}: minAvailable {min_available} of {replicas} pods lets no "
                                "drain evict any of them")
        if kind == "NetworkPolicy":
            selector = doc["spec"]["podSelector"]
            if selector and not selected_workloads(documents, selector):
                problems.append(f"{at}: podSelector matches no workload's pods")
            for rule in doc["spec"].get("ingress", []):
                for peer in rule.get("from", []):
                    if "podSelector" in peer and "namespaceSelector" not in peer and \
                            not selected_workloads(documents, peer["podSelector"]):
                        problems.append(f"{at}: a peer's podSelector {peer['podSelector']} "
                                        "matches no pod of this namespace")
    return problems


def _allowed_ingress(documents, labels, port):
    """The ingress rules of every NetworkPolicy selecting pods with `labels` that let `port` in."""
    rules = []
    for _, doc in documents:
        if doc.get("kind") != "NetworkPolicy" or "Ingress" not in doc["spec"].get(
                "policyTypes", ["Ingress"]):
            continue
        if not labels_match(doc["spec"]["podSelector"], labels):
            continue
        for rule in doc["spec"].get("ingress", []):
            ports = [p.get("port") for p in rule.get("ports", [])]
            if not ports or port in ports:
                rules.append(rule)
    return rules


def port_problems(documents, generated):
    """Flags against ports, probes, the Services, the NetworkPolicies and the database URI."""
    problems = []
    server, container, flags, grpc_port, http_port = server_parts(documents)
    at = "server.yaml: StatefulSet/gtco-server"
    named = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    if named.get("grpc") != grpc_port:
        problems.append(f"{at}: containerPort grpc is {named.get('grpc')!r}, --listen says "
                        f"{grpc_port}")
    if named.get("http") != http_port:
        problems.append(f"{at}: containerPort http is {named.get('http')!r}, --metrics-port "
                        f"says {http_port}")
    if not str(flags.get("listen", "")).startswith(("0.0.0.0:", "[::]:")):
        problems.append(f"{at}: --listen {flags.get('listen')} is not reachable from other pods")
    if flags.get("metrics-address", flags.get("http-address")) not in ("0.0.0.0", "[::]", "::"):
        problems.append(f"{at}: the HTTP port binds loopback only: Prometheus cannot scrape it")
    for probe in ("readinessProbe", "livenessProbe"):
        command = container.get(probe, {}).get("exec", {}).get("command")
        if not command:
            problems.append(f"{at}: no {probe} (exec gtco-server-probe PORT)")
        elif command[0] != "gtco-server-probe" or len(command) < 2 or \
                command[1] != str(grpc_port):
            problems.append(f"{at}: {probe} runs {command}, not gtco-server-probe on the gRPC "
                            f"port {grpc_port}")
        elif "--tls-ca" not in command and "tls-cert" in flags:
            problems.append(f"{at}: {probe} does not pass --tls-ca to a TLS server")
    service = find(documents, "Service", server["spec"]["serviceName"])
    if service is not None:
        ports = {p.get("name"): p for p in service["spec"].get("ports", [])}
        for name, number in (("grpc", grpc_port), ("http", http_port)):
            if name not in ports or ports[name]["port"] != number:
                problems.append(f"server.yaml: Service/{service['metadata']['name']}: port "
                                f"{name} should be {number}")
        annotated = service["metadata"].get("annotations", {}).get("prometheus.io/port")
        if annotated is not None and annotated != str(http_port):
            problems.append(f"server.yaml: Service/{service['metadata']['name']}: "
                            f"prometheus.io/port {annotated} is not the HTTP port {http_port}")
        # Workers dial each server pod by name, on the gRPC port.
        expected = [f"{server['metadata']['name']}-{index}.{service['metadata']['name']}:"
                    f"{grpc_port}" for index in range(server["spec"].get("replicas", 1))]
        for worker in worker_deployments(documents):
            for worker_container in containers_of(worker):
                addresses = str(flag_values(worker_container.get("args", [])).get("server", ""))
                if sorted(addresses.split(",")) != sorted(expected):
                    problems.append(f"Deployment/{worker['metadata']['name']}: --server "
                                    f"{addresses} should list every server pod: "
                                    f"{','.join(expected)}")
    # Every port a pod exposes is let in by some NetworkPolicy; the server's gRPC port by the
    # workers and labelled clients only, its HTTP port by Prometheus.
    for name, doc in workloads(documents):
        labels = pod_template(doc)["metadata"]["labels"]
        for pod_container in containers_of(doc):
            for port in pod_container.get("ports", []):
                if not _allowed_ingress(documents, labels, port["containerPort"]):
                    problems.append(f"{where(name, doc)}: no NetworkPolicy lets port "
                                    f"{port['containerPort']} in")
    server_labels = pod_template(server)["metadata"]["labels"]
    grpc_rules = _allowed_ingress(documents, server_labels, grpc_port)
    peers = [peer for rule in grpc_rules for peer in rule.get("from", [{}])]
    if any(not peer or "ipBlock" in peer and peer["ipBlock"].get("cidr") in ("0.0.0.0/0",)
           for peer in peers):
        problems.append("networkpolicy.yaml: the server's gRPC port is open to everyone")
    for worker in worker_deployments(documents):
        labels = pod_template(worker)["metadata"]["labels"]
        if not any("namespaceSelector" not in peer and "podSelector" in peer and
                   labels_match(peer["podSelector"], labels) for peer in peers):
            problems.append(f"networkpolicy.yaml: Deployment/{worker['metadata']['name']} cannot "
                            f"reach the server's gRPC port {grpc_port}")
    for peer in peers:
        if "podSelector" in peer and "namespaceSelector" not in peer and not any(
                labels_match(peer["podSelector"], pod_template(w)["metadata"]["labels"])
                for w in worker_deployments(documents)):
            problems.append(f"networkpolicy.yaml: the gRPC port lets in {peer['podSelector']}, "
                            "which are not workers")
    if not any("namespaceSelector" in peer and peer.get("podSelector", {}).get("matchLabels")
               for peer in peers):
        problems.append("networkpolicy.yaml: no labelled client pods may reach the gRPC port")
    if not any("prometheus" in json.dumps(peer) for rule in
               _allowed_ingress(documents, server_labels, http_port)
               for peer in rule.get("from", [])):
        problems.append("networkpolicy.yaml: Prometheus cannot reach the HTTP port "
                        f"{http_port}")
    # The database URI names the PostgreSQL Service, its port, user and database.
    env = {e["name"]: e for e in container.get("env", [])}
    database = None
    if "$(GTCO_DB)" in container.get("args", []) and "GTCO_DB" in env:
        ref = env["GTCO_DB"]["valueFrom"]["configMapKeyRef"]
        database = generated.get(("ConfigMap", ref["name"]), {}).get(ref["key"], (None, ""))[1]
    postgres = find(documents, "StatefulSet", "gtco-postgres")
    if postgres is not None:
        match = re.match(r"^postgres(?:ql)?://([^@:/]+)@([^:/]+):(\d+)/([^?]+)", database or "")
        service = find(documents, "Service", postgres["spec"]["serviceName"])
        pg_env = {e["name"]: e.get("value") for e in container_named(postgres, "postgres")["env"]}
        pg_port = {p.get("name"): p for p in service["spec"]["ports"]}.get("postgres", {})
        if not match:
            problems.append(f"the server's database {database!r} is not "
                            "postgresql://USER@HOST:PORT/DB")
        elif (match.group(2), int(match.group(3))) != (service["metadata"]["name"],
                                                       pg_port.get("port")):
            problems.append(f"the server's database {database} is not the Service "
                            f"{service['metadata']['name']}:{pg_port.get('port')}")
        elif (match.group(1), match.group(4)) != (pg_env.get("POSTGRES_USER"),
                                                  pg_env.get("POSTGRES_DB")):
            problems.append(f"the server's database {database} is not PostgreSQL's user "
                            f"{pg_env.get('POSTGRES_USER')} and database "
                            f"{pg_env.get('POSTGRES_DB')}")
        if "PGPASSWORD" not in env:
            problems.append(f"{at}: no PGPASSWORD for the database")
    return problems


def security_problems(documents):
    """The restricted Pod Security Standard, resource requests, and per-target specifics."""
    problems = []
    namespace = next((doc for _, doc in documents if doc.get("kind") == "Namespace"), None)
    if namespace is None or namespace["metadata"].get("labels", {}).get(
            "pod-security.kubernetes.io/enforce") != "restricted":
        problems.append("namespace.yaml: the Namespace does not enforce the restricted Pod "
                        "Security Standard")
    for name, doc in workloads(documents):
        at = where(name, doc)
        spec = pod_template(doc)["spec"]
        pod_security = spec.get("securityContext", {})
        if pod_security.get("runAsNonRoot") is not True:
            problems.append(f"{at}: securityContext.runAsNonRoot is not true")
        if pod_security.get("runAsUser", 1) == 0 or pod_security.get("runAsGroup", 1) == 0:
            problems.append(f"{at}: runs as root")
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{at}: mounts a service account token it does not need")
        for volume in spec.get("volumes", []):
            if "hostPath" in volume:
                problems.append(f"{at}: volume {volume['name']} is a hostPath")
        for container in containers_of(doc):
            where_container = f"{at} container {container['name']}"
            security = container.get("securityContext", {})
            seccomp = security.get("seccompProfile", pod_security.get("seccompProfile", {}))
            if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
                problems.append(f"{where_container}: no RuntimeDefault seccomp profile")
            if security.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where_container}: allowPrivilegeEscalation is not false")
            if "ALL" not in security.get("capabilities", {}).get("drop", []):
                problems.append(f"{where_container}: does not drop ALL capabilities")
            if security.get("privileged"):
                problems.append(f"{where_container}: is privileged")
            if security.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where_container}: the root filesystem is writable")
            if security.get("runAsUser") == 0:
                problems.append(f"{where_container}: runs as root")
            if not container.get("resources", {}).get("requests"):
                problems.append(f"{where_container}: requests no resources")
    for worker in worker_deployments(documents):
        at = f"Deployment/{worker['metadata']['name']}"
        for container in containers_of(worker):
            target = flag_values(container.get("args", [])).get("target")
            resources = container.get("resources", {})
            limits, requests = resources.get("limits", {}), resources.get("requests", {})
            if target == "cuda" and int(limits.get("nvidia.com/gpu", 0)) < 1:
                problems.append(f"{at}: a CUDA worker without an nvidia.com/gpu limit")
            if target == "cpu":
                if requests != limits or "cpu" not in limits or not re.fullmatch(
                        r"\d+", str(limits["cpu"])):
                    problems.append(f"{at}: a CPU worker should be Guaranteed with whole CPUs "
                                    "(requests equal to limits) for steady timings")
                threads = flag_values(container.get("args", [])).get("threads")
                env = {e["name"]: e for e in container.get("env", [])}
                field = env.get(str(threads)[2:-1], {}).get("valueFrom", {}).get(
                    "resourceFieldRef", {}) if str(threads).startswith("$(") else {}
                if field.get("resource") != "limits.cpu":
                    problems.append(f"{at}: --threads {threads} does not follow the CPU limit "
                                    "(the worker would use every core of the node)")
    return problems


# ----------------------------------------------------------------------------------------------
# Container files


def parse_containerfile(path):
    """[{"from": image, "as": name, "instructions": [(INSTRUCTION, arguments)]}]."""
    with open(path) as file:
        text = file.read()
    logical = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    stages = []
    for line in logical:
        instruction, _, arguments = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            words = arguments.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append({"from": words[0], "as": name, "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((instruction, arguments.strip()))
    return stages


def apt_installed(stage):
    """The packages a stage's RUN lines `apt-get install`."""
    packages = []
    for instruction, arguments in stage["instructions"]:
        if instruction != "RUN":
            continue
        for command in re.split(r"&&|;|\|\|", arguments):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                after = words[words.index("install") + 1:]
                packages += [word for word in after if not word.startswith("-")]
    return packages


def _installed_packages():
    """{package: (essential, [[alternative, ...], ...] dependencies, provides)} from dpkg."""
    output = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${Essential}\t${Pre-Depends}, ${Depends}\t"
         "${Provides}\t${db:Status-Status}\n"], capture_output=True, text=True,
        check=True).stdout
    packages = {}
    for line in output.splitlines():
        package, essential, depends, provides, status = line.split("\t")
        if status != "installed":
            continue
        alternatives = []
        for group in depends.split(","):
            names = [re.split(r"[\s(:]", part.strip())[0] for part in group.split("|")]
            names = [name for name in names if name]
            if names:
                alternatives.append(names)
        provided = [re.split(r"[\s(:]", part.strip())[0] for part in provides.split(",")
                    if part.strip()]
        packages[package] = (essential == "yes", alternatives, provided)
    return packages


def package_closure(roots, packages):
    """The packages apt installs for `roots` (Depends, Pre-Depends; the installed alternative)."""
    providers = {}
    for package, (_, _, provided) in packages.items():
        for name in provided:
            providers.setdefault(name, package)
    closure, stack = set(), list(roots)
    while stack:
        package = stack.pop()
        package = package if package in packages else providers.get(package, package)
        if package in closure:
            continue
        closure.add(package)
        for group in packages.get(package, (False, [], []))[1]:
            chosen = next((name for name in group if name in packages or name in providers),
                          None)
            if chosen:
                stack.append(chosen)
    return closure


def library_packages(binary):
    """({package: [libraries]}, [libraries no package owns]) for a binary's ldd."""
    output = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libraries = {}
    for line in output.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match:
            if match.group(2) == "not":
                raise AssertionError(f"ldd {binary}: {line.strip()}")
            libraries[match.group(1)] = match.group(2)
    candidates = {}
    for soname, path in libraries.items():
        real = os.path.realpath(path)
        options = [real, path]
        options += [option[len("/usr"):] for option in (real, path) if option.startswith("/usr/")]
        candidates[soname] = options
    paths = sorted({option for options in candidates.values() for option in options})
    result = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True)
    owner = {}
    for line in result.stdout.splitlines():
        names, _, path = line.rpartition(": ")
        owner[path] = [name.strip().split(":")[0] for name in names.split(",")]
    by_package, unowned = {}, []
    for soname, options in candidates.items():
        package = next((owner[option][0] for option in options if option in owner), None)
        if package is None:
            unowned.append(libraries[soname])
        else:
            by_package.setdefault(package, []).append(soname)
    return by_package, unowned


# ----------------------------------------------------------------------------------------------
# Tests


class ManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kustomization = load_kustomization()
        cls.documents = load_manifests(cls.kustomization)
        cls.secrets = scratch_dir("gtco-k8s-secrets-")
        if not shutil.which("openssl"):
            raise AssertionError("openssl is missing: run scripts/setup.sh --tests")
        run_make_secrets(cls.secrets)
        cls.generated = generated_objects(cls.kustomization, cls.secrets)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.secrets, ignore_errors=True)

    def assertNoProblems(self, problems, what):
        if problems:
            self.fail(f"{what}:\n  " + "\n  ".join(problems))

    def require_validator(self):
        if kubernetes_validate is None:
            self.fail(f"kubernetes-validate is not importable ({IMPORT_ERROR}): run "
                      "scripts/setup.sh --tests (it installs the pinned wheels into .deps/k8s)")

    def test_kustomization_lists_every_manifest(self):
        listed = set(self.kustomization.get("resources", []))
        present = {name for name in os.listdir(K8S)
                   if name.endswith((".yaml", ".yml")) and name != "kustomization.yaml"}
        self.assertEqual(present - listed, set(), "manifests kustomization.yaml does not list")
        self.assertEqual(listed - present, set(), "kustomization.yaml lists missing files")
        self.assertEqual(self.kustomization.get("namespace"), "gtco")
        # Generators read only what make-secrets.sh writes (or files in deploy/k8s).
        for (kind, name), data in self.generated.items():
            for key, (source, value) in data.items():
                if source == "file":
                    self.assertTrue(os.path.exists(value),
                                    f"{kind} {name} key {key}: make-secrets.sh does not write "
                                    f"{value}")
        tls = [g for g in self.kustomization.get("secretGenerator", [])
               if g.get("type") == "kubernetes.io/tls"]
        for generator in tls:
            self.assertLessEqual({"tls.crt", "tls.key"},
                                 set(self.generated[("Secret", generator["name"])]))
        # The images the manifests run are the ones deploy/containers builds.
        mapped = {image["name"] for image in self.kustomization.get("images", [])}
        for name, doc in workloads(self.documents):
            for container in containers_of(doc):
                image = container["image"]
                if image in MANIFEST_IMAGES:
                    self.assertIn(image, mapped, f"{where(name, doc)}: kustomization.yaml "
                                  f"images: does not say where {image} is pushed")
                    self.assertTrue(os.path.exists(os.path.join(
                        CONTAINERS, MANIFEST_IMAGES[image])))
                else:
                    self.assertRegex(image, r"^[\w.-]+(:\d+)?/.+:[\w.-]+$",
                                     f"{where(name, doc)}: {image} is neither ours nor pinned")

    def test_manifests_validate_against_kubernetes_schemas(self):
        self.require_validator()
        self.assertNoProblems(schema_problems(self.documents), "Kubernetes schema errors")

    def test_kustomize_build(self):
        """Where kustomize or kubectl is installed (not on a plain Debian 12): the kustomization
        builds with make-secrets.sh's files, every object it renders (generated ConfigMaps and
        Secrets included) validates, and the generated names replace every reference."""
        self.require_validator()
        if shutil.which("kustomize"):
            command = [shutil.which("kustomize"), "build"]
        elif shutil.which("kubectl"):
            command = [shutil.which("kubectl"), "kustomize"]
        else:
            self.skipTest("neither kustomize nor kubectl is installed; the other checks read "
                          "the kustomization directly")
        work = scratch_dir("gtco-kustomize-")
        try:
            tree = os.path.join(work, "k8s")
            shutil.copytree(K8S, tree, ignore=shutil.ignore_patterns("secrets"))
            shutil.copytree(self.secrets, os.path.join(tree, "secrets"))
            result = subprocess.run(command + [tree], capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            rendered = [("kustomize build", doc) for doc in yaml.safe_load_all(result.stdout)
                        if doc]
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.assertNoProblems(schema_problems(rendered), "rendered objects fail the schemas")
        generated = {name for _, name in self.generated}
        names = {doc["metadata"]["name"] for _, doc in rendered
                 if doc["kind"] in ("ConfigMap", "Secret")}
        for base in generated:
            self.assertTrue(any(name.startswith(base + "-") for name in names), base)
        # Every Secret and ConfigMap a rendered pod reads is a rendered one (or the operator's).
        rendered_generated = {key: {} for key in (
            (doc["kind"], doc["metadata"]["name"]) for _, doc in rendered
            if doc["kind"] in ("ConfigMap", "Secret"))}
        for (kind, name), data in self.generated.items():
            for key in rendered_generated:
                if key[0] == kind and key[1].startswith(name + "-"):
                    rendered_generated[key] = data
        self.assertNoProblems(reference_problems(rendered, rendered_generated),
                              "rendered references")
        images = {c["image"] for _, doc in workloads(rendered) for c in containers_of(doc)}
        for image in self.kustomization.get("images", []):
            self.assertIn(f"{image['newName']}:{image['newTag']}", images)

    def test_scaled_objects(self):
        self.require_validator()
        promtool = shutil.which("promtool")
        if not promtool:
            self.fail("promtool is missing: run scripts/setup.sh --tests (Debian package "
                      "prometheus)")
        self.assertNoProblems(keda_problems(self.documents, promtool), "ScaledObject errors")
        scaled = [doc for _, doc in self.documents if doc.get("kind") == "ScaledObject"]
        targets = {doc["spec"]["scaleTargetRef"]["name"] for doc in scaled}
        self.assertEqual(targets, {doc["metadata"]["name"]
                                   for doc in worker_deployments(self.documents)},
                         "every worker Deployment should scale on the queue depth")
        # The gauge is the server's (and the Grafana dashboard's), not a name made up here.
        with open(os.path.join(SOURCE_DIR, "server", "farm_metrics.cc")) as file:
            self.assertIn(f'"{QUEUE_METRIC}"', file.read())
        with open(os.path.join(SOURCE_DIR, "deploy", "grafana", "gtco.json")) as file:
            self.assertIn(QUEUE_METRIC, file.read())

    def test_references_are_defined(self):
        self.assertNoProblems(reference_problems(self.documents, self.generated),
                              "undefined references")
        with open(os.path.join(SOURCE_DIR, "README.md")) as file:
            readme = file.read()
        for name in OPERATOR_SECRETS:
            self.assertIn(f"create secret generic {name}", readme,
                          f"the README does not say how to create the Secret {name}")

    def test_selectors_match(self):
        self.assertNoProblems(selector_problems(self.documents), "selector mismatches")

    def test_ports_flags_and_probes_agree(self):
        self.assertNoProblems(port_problems(self.documents, self.generated),
                              "port, flag and probe mismatches")

    def test_flags_are_the_binaries(self):
        """Every flag a container passes is one its binary's usage text documents (the live
        test runs the server and the CPU worker; this also covers the CUDA worker)."""
        binaries = {"Containerfile.server": SERVER, "Containerfile.worker": WORKER,
                    "Containerfile.worker-cuda": WORKER}
        for name, doc in workloads(self.documents):
            for container in containers_of(doc):
                if container["image"] not in MANIFEST_IMAGES:
                    continue
                binary = binaries[MANIFEST_IMAGES[container["image"]]]
                usage = subprocess.run([binary, "--help"], capture_output=True, text=True,
                                       timeout=60)
                text = usage.stdout + usage.stderr
                for flag in flag_values(container.get("args", [])):
                    self.assertRegex(text, rf"--{re.escape(flag)}\b",
                                     f"{where(name, doc)}: {os.path.basename(binary)} --help "
                                     f"does not know --{flag}")

    def test_pods_are_restricted(self):
        self.assertNoProblems(security_problems(self.documents), "pod security problems")
        users = set()
        for name, doc in workloads(self.documents):
            if any(c["image"] in MANIFEST_IMAGES for c in containers_of(doc)):
                users.add(pod_template(doc)["spec"]["securityContext"].get("runAsUser"))
        for name in MANIFEST_IMAGES.values():
            final = parse_containerfile(os.path.join(CONTAINERS, name))[-1]
            user = [a for i, a in final["instructions"] if i == "USER"][-1].split(":")[0]
            self.assertEqual(users, {int(user)}, f"the pods' runAsUser is not {name}'s USER")

    def test_certificate_names_what_workers_dial(self):
        """make-secrets.sh's certificate: signed by its CA, for every server address the
        workers dial and for localhost (the probes)."""
        result = subprocess.run(["openssl", "verify", "-CAfile",
                                 os.path.join(self.secrets, "ca.crt"),
                                 os.path.join(self.secrets, "tls.crt")],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        text = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in",
                               os.path.join(self.secrets, "tls.crt")], capture_output=True,
                              text=True, check=True, timeout=60).stdout
        names = set(re.findall(r"DNS:([^,\s]+)", text))
        hosts = {"localhost"}
        for worker in worker_deployments(self.documents):
            for container in containers_of(worker):
                for address in str(flag_values(container["args"])["server"]).split(","):
                    hosts.add(address.rsplit(":", 1)[0])
        self.assertEqual(hosts - names, set(), f"the certificate does not name them: {text}")


class LiveFarmFromManifestsTest(unittest.TestCase):
    """The server pair and a CPU worker, run from the manifests' own arguments."""

    def setUp(self):
        self.kustomization = load_kustomization()
        self.documents = load_manifests(self.kustomization)
        self.dir = scratch_dir("gtco-k8s-live-")
        self.secrets = os.path.join(self.dir, "secrets")
        run_make_secrets(self.secrets)
        self.generated = generated_objects(self.kustomization, self.secrets)
        self.db = os.path.join(self.dir, "gtco.db")
        self.processes = []
        self.logs = []

    def tearDown(self):
        stop_processes(self.processes, timeout=20)
        shutil.rmtree(self.dir, ignore_errors=True)

    def read_logs(self):
        text = []
        for path in self.logs:
            with open(path, "rb") as file:
                text.append(f"--- {os.path.basename(path)}\n" +
                            file.read().decode(errors="replace")[-3000:])
        return "\n".join(text)

    def materialize(self, doc, name):
        """The pod's mounted Secrets and ConfigMaps as directories: {mountPath: directory}."""
        spec = pod_template(doc)["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mounts = {}
        for mount in container_named(doc, name).get("volumeMounts", []):
            volume = volumes.get(mount["name"], {})
            if "secret" in volume:
                key = ("Secret", volume["secret"]["secretName"])
            elif "configMap" in volume:
                key = ("ConfigMap", volume["configMap"]["name"])
            else:
                continue
            directory = os.path.join(self.dir, "volumes", doc["metadata"]["name"],
                                     mount["name"])
            os.makedirs(directory, exist_ok=True)
            for item_key, (source, value) in self.generated[key].items():
                target = os.path.join(directory, item_key)
                if source == "file":
                    shutil.copyfile(value, target)
                else:
                    with open(target, "w") as file:
                        file.write(value)
            mounts[mount["mountPath"].rstrip("/")] = directory
        return mounts

    def environment(self, doc, name, overrides):
        """The container's environment as the kubelet would give it (generators resolved)."""
        env = {}
        for entry in container_named(doc, name).get("env", []):
            if entry["name"] in overrides:
                env[entry["name"]] = overrides[entry["name"]]
            elif "value" in entry:
                env[entry["name"]] = entry["value"]
            else:
                source = entry["valueFrom"]
                if "configMapKeyRef" in source:
                    ref = source["configMapKeyRef"]
                    env[entry["name"]] = self.generated[("ConfigMap", ref["name"])][ref["key"]][1]
                elif "secretKeyRef" in source:
                    ref = source["secretKeyRef"]
                    data = self.generated.get(("Secret", ref["name"]))
                    env[entry["name"]] = data[ref["key"]][1] if data else overrides.get(
                        entry["name"], "")
                elif "resourceFieldRef" in source:
                    ref = source["resourceFieldRef"]
                    container = container_named(doc, ref.get("containerName", name))
                    section, _, resource = ref["resource"].partition(".")
                    value = str(container["resources"][section][resource])
                    cores = float(value[:-1]) / 1000 if value.endswith("m") else float(value)
                    env[entry["name"]] = str(math.ceil(cores / float(ref.get("divisor", 1))))
        return env

    @staticmethod
    def expand(word, env, mounts, replacements):
        """$(VAR) as the kubelet expands it, then mount paths and addresses made local."""
        word = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), str(word))
        for mount_path, directory in mounts.items():
            if word.startswith(mount_path + "/"):
                word = directory + word[len(mount_path):]
        for old, new in replacements:
            word = re.sub(old, new, word)
        return word

    def probe(self, doc, mounts, env, port):
        command = container_named(doc, "server")["readinessProbe"]["exec"]["command"]
        argv = [PROBE] + [self.expand(w, env, mounts, [(r"^\d+$", str(port))])
                          for w in command[1:]]
        path = os.path.dirname(CLIENT) + os.pathsep + os.environ.get("PATH", "")
        return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PATH=path))

    def metrics(self, port):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
                return reply.read().decode()
        except OSError:
            return ""

    def wait(self, what, predicate, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate():
                return
            time.sleep(0.3)
        self.fail(f"timed out waiting until {what}:\n{self.read_logs()}")

    def start(self, argv, env, log_name):
        log = os.path.join(self.dir, log_name)
        self.logs.append(log)
        with open(log, "wb") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                       env=dict(os.environ, **env))
        self.processes.append(process)
        return process

    def test_server_pair_and_worker_from_the_manifests(self):
        server, container, flags, grpc_port, http_port = server_parts(self.documents)
        service = server["spec"]["serviceName"]
        mounts = self.materialize(server, "server")
        # SQLite in place of PostgreSQL; each pod gets loopback ports of its own.
        env = self.environment(server, "server", {"GTCO_DB": self.db})
        pods = [(free_port(), free_port()) for _ in range(server["spec"]["replicas"])]
        self.assertEqual(len(pods), 2, "an active + standby pair")
        servers = []
        for index, (pod_grpc, pod_http) in enumerate(pods):
            replacements = [(rf":{grpc_port}$", f":{pod_grpc}"), (rf"^{http_port}$", str(pod_http))]
            argv = [SERVER] + [self.expand(w, env, mounts, replacements)
                               for w in container["args"]]
            servers.append(self.start(argv, env, f"server-{index}.log"))
            if index == 0:
                self.wait("the first server serves",
                          lambda: "SERVING" in self.probe(server, mounts, env, pod_grpc).stdout)
        self.wait("the second server is a standby", lambda: "standby" in self.read_logs())
        for index, (pod_grpc, _) in enumerate(pods):
            result = self.probe(server, mounts, env, pod_grpc)
            self.assertEqual(result.returncode, 0, f"probe of server {index}: {result.stdout}"
                             f"{result.stderr}\n{self.read_logs()}")
        self.assertIn("SERVING", self.probe(server, mounts, env, pods[0][0]).stdout)
        self.assertIn("nothing listens", self.probe(server, mounts, env, pods[1][0]).stdout)

        # A worker token, issued as the README says, then the CPU worker's own arguments.
        token = subprocess.run([SERVER, "admin", "--db", self.db, "issue-token", "--role",
                                "worker"], capture_output=True, text=True, check=True,
                               timeout=60).stdout.strip()
        worker = next(w for w in worker_deployments(self.documents)
                      if flag_values(containers_of(w)[0]["args"]).get("target") == "cpu")
        worker_container = containers_of(worker)[0]
        worker_mounts = self.materialize(worker, worker_container["name"])
        worker_env = self.environment(worker, worker_container["name"], {"GTCO_TOKEN": token})
        replacements = [(rf"\b{server['metadata']['name']}-{index}\.{service}:{grpc_port}\b",
                         f"localhost:{pod_grpc}") for index, (pod_grpc, _) in enumerate(pods)]
        argv = [WORKER] + [self.expand(w, worker_env, worker_mounts, replacements)
                           for w in worker_container["args"]]
        self.start(argv, worker_env, "worker.log")
        self.wait("the worker registers with the leader", lambda: re.search(
            r'^gtco_connected_workers\{target="cpu"\} [1-9]', self.metrics(pods[0][1]), re.M))
        # The series the autoscaler's query selects.
        scaled = next(doc for _, doc in self.documents if doc.get("kind") == "ScaledObject" and
                      doc["spec"]["scaleTargetRef"]["name"] == worker["metadata"]["name"])
        query = scaled["spec"]["triggers"][0]["metadata"]["query"]
        series = re.search(QUEUE_METRIC + r"\{[^}]*\}", query).group(0)
        self.assertIn(series, self.metrics(pods[0][1]).replace(", ", ","),
                      "the leader does not export what the autoscaler reads")

        # The leader stops (a rolling update or a drain): the standby leads and its probe now
        # asks a serving server. (Workers following it is standby_test's.)
        servers[0].send_signal(signal.SIGTERM)
        servers[0].wait(timeout=30)
        self.wait("the standby serves",
                  lambda: "SERVING" in self.probe(server, mounts, env, pods[1][0]).stdout)
        self.assertIn(series, self.metrics(pods[1][1]).replace(", ", ","))


class ContainerfileTest(unittest.TestCase):
    def test_every_container_file_is_checked(self):
        present = {name for name in os.listdir(CONTAINERS) if name.startswith("Containerfile.")}
        self.assertEqual(present, set(IMAGES))

    def test_stages_user_entrypoint_and_sources(self):
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as file:
            subdirectories = set(re.findall(r"^\s*add_subdirectory\((\S+?)\)", file.read(), re.M))
        needed_sources = {d for d in subdirectories if not d.startswith("tests")}
        needed_sources |= {"CMakeLists.txt", "scripts/setup.sh"}
        for name, (binary, _) in IMAGES.items():
            with self.subTest(name):
                stages = parse_containerfile(os.path.join(CONTAINERS, name))
                self.assertGreaterEqual(len(stages), 2, "a build stage and a final stage")
                build, final = stages[0], stages[-1]
                self.assertEqual(build["as"], "build", "FROM ... AS build")
                self.assertRegex(build["from"], r"(^|/)debian:(12|bookworm)$")
                self.assertRegex(final["from"], r"(^|/)debian:(12|bookworm)-slim$")
                runs = " ".join(a for i, a in build["instructions"] if i == "RUN")
                self.assertIn("scripts/setup.sh", runs)
                self.assertRegex(runs, rf"cmake --build .*--target [^&]*\b{binary}\b")
                copied = {a.split()[0] for i, a in build["instructions"] if i == "COPY"}
                self.assertEqual(needed_sources - copied, set(),
                                 "the build stage does not copy these sources")
                users = [a for i, a in final["instructions"] if i == "USER"]
                self.assertTrue(users, "no USER in the final stage")
                user = users[-1].split(":")[0]
                self.assertNotIn(user, ("root", "0"))
                if user.isdigit():
                    self.assertTrue(any(i == "RUN" and f"--uid {user}" in a
                                        for i, a in final["instructions"]),
                                    f"no user with uid {user} is created")
                entrypoints = [a for i, a in final["instructions"] if i == "ENTRYPOINT"]
                self.assertTrue(entrypoints, "no ENTRYPOINT")
                entrypoint = json.loads(entrypoints[-1])
                self.assertEqual(entrypoint[0], f"/usr/local/bin/{binary}")
                copies = " ".join(a for i, a in final["instructions"] if i == "COPY")
                self.assertRegex(copies, rf"--from=build \S*/build/\S+/{binary}\b")
                for instruction, arguments in final["instructions"]:
                    if instruction == "COPY" and not arguments.startswith("--from"):
                        source = arguments.split()[0]
                        self.assertTrue(os.path.exists(os.path.join(SOURCE_DIR, source)), source)

    def test_server_image_has_probe_and_linker(self):
        final = parse_containerfile(os.path.join(CONTAINERS, "Containerfile.server"))[-1]
        copies = " ".join(a for i, a in final["instructions"] if i == "COPY")
        self.assertIn("gtco-server-probe", copies)
        self.assertIn("/build/client/gtco-client", copies)
        self.assertTrue(os.access(PROBE, os.X_OK), "gtco-server-probe is not executable")
        # export links the kernels' shared object with `cc ... -lm` (common/codegen/llvm/aot.cc).
        self.assertLessEqual({"gcc", "libc6-dev"}, set(apt_installed(final)))

    def test_cuda_worker_image_has_nvrtc(self):
        final = parse_containerfile(os.path.join(CONTAINERS, "Containerfile.worker-cuda"))[-1]
        copies = " ".join(a for i, a in final["instructions"] if i == "COPY")
        self.assertRegex(copies, r"libnvrtc\.so\.\d+")
        self.assertRegex(copies, r"libnvrtc-builtins\.so")
        env = " ".join(a for i, a in final["instructions"] if i == "ENV")
        library = re.search(r"GTCO_NVRTC_LIBRARY=(\S+)", env)
        self.assertTrue(library, "GTCO_NVRTC_LIBRARY is not set")
        self.assertIn(os.path.basename(library.group(1)), copies)
        self.assertIn(os.path.dirname(library.group(1)), copies)

    def test_final_stages_install_the_binaries_libraries(self):
        if os.environ.get("GTCO_BIN_DIR"):
            self.skipTest("GTCO_BIN_DIR binaries carry their own libraries")
        if not shutil.which("dpkg-query"):
            self.skipTest("not a Debian system: no dpkg to map libraries to packages")
        packages = _installed_packages()
        base = [p for p, (essential, _, _) in packages.items() if essential] + ["apt"]
        for name, (_, binaries) in IMAGES.items():
            with self.subTest(name):
                final = parse_containerfile(os.path.join(CONTAINERS, name))[-1]
                installed = apt_installed(final)
                unknown = [p for p in installed if p not in packages and subprocess.run(
                    ["apt-cache", "show", p], capture_output=True).returncode != 0]
                self.assertEqual(unknown, [], "no such Debian packages")
                present = package_closure(base + installed, packages)
                for binary in binaries:
                    self.assertTrue(os.access(binary, os.X_OK), f"{binary} is not built")
                    needed, unowned = library_packages(binary)
                    self.assertEqual(unowned, [], f"{binary}: libraries no Debian package owns")
                    missing = {p: libs for p, libs in needed.items() if p not in present}
                    self.assertEqual(missing, {}, f"{binary} needs these packages (their "
                                     f"libraries) in {name}'s final stage")
        nvrtc = os.path.join(SOURCE_DIR, ".deps", "cuda", "nvidia", "cu13", "lib")
        if os.path.isdir(nvrtc):
            for library in ("libnvrtc.so.13", "libnvrtc-builtins.so.13.0"):
                needed, _ = library_packages(os.path.join(nvrtc, library))
                self.assertLessEqual(set(needed), package_closure(base, packages), library)


class CheckersCatchBreakageTest(unittest.TestCase):
    """Each checker reports a manifest broken on purpose (so a pass above means something)."""

    @classmethod
    def setUpClass(cls):
        cls.kustomization = load_kustomization()
        cls.documents = load_manifests(cls.kustomization)
        cls.secrets = scratch_dir("gtco-k8s-secrets-")
        run_make_secrets(cls.secrets)
        cls.generated = generated_objects(cls.kustomization, cls.secrets)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.secrets, ignore_errors=True)

    def broken(self, kind, name, change):
        documents = copy.deepcopy(self.documents)
        change(find(documents, kind, name))
        return documents

    def assertReports(self, problems, text):
        self.assertTrue(any(text in problem for problem in problems),
                        f"expected a problem mentioning {text!r}, got {problems}")

    def test_schema_error(self):
        if kubernetes_validate is None:
            self.fail(f"kubernetes-validate is not importable ({IMPORT_ERROR})")

        def port_as_text(doc):
            container_named(doc, "server")["ports"][0]["containerPort"] = "7070"

        def unknown_field(doc):
            doc["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"

        self.assertReports(schema_problems(self.broken("StatefulSet", "gtco-server",
                                                       port_as_text)), "containerPort")
        self.assertReports(schema_problems(self.broken("Deployment", "gtco-worker-cpu",
                                                       unknown_field)), "imagePullPolice")

    def test_keda_errors(self):
        if kubernetes_validate is None:
            self.fail(f"kubernetes-validate is not importable ({IMPORT_ERROR})")

        def wrong_target(doc):
            doc["spec"]["triggers"][0]["metadata"]["query"] = 'max(gtco_queue_depth{target="gpu"})'

        def typo(doc):
            doc["spec"]["maxReplicas"] = 3

        self.assertReports(keda_problems(self.broken("ScaledObject", "gtco-worker-cpu",
                                                     wrong_target)), "target='gpu'")
        self.assertReports(keda_problems(self.broken("ScaledObject", "gtco-worker-cpu", typo)),
                           "maxReplicas")

    def test_reference_error(self):
        def wrong_secret(doc):
            env = container_named(doc, "server")["env"]
            next(e for e in env if e["name"] == "PGPASSWORD")["valueFrom"]["secretKeyRef"][
                "name"] = "gtco-postgress"

        def wrong_file(doc):
            args = container_named(doc, "server")["args"]
            args[args.index("--tls-cert") + 1] = "/etc/gtco/tls/server.crt"

        self.assertReports(reference_problems(self.broken("StatefulSet", "gtco-server",
                                                          wrong_secret), self.generated),
                           "gtco-postgress")
        self.assertReports(reference_problems(self.broken("StatefulSet", "gtco-server",
                                                          wrong_file), self.generated),
                           "server.crt")

    def test_selector_error(self):
        def relabel(doc):
            doc["spec"]["selector"]["app.kubernetes.io/component"] = "servers"

        self.assertReports(selector_problems(self.broken("Service", "gtco-server", relabel)),
                           "matches no workload")

    def test_port_errors(self):
        def probe_port(doc):
            container_named(doc, "server")["livenessProbe"]["exec"]["command"][1] = "7071"

        def open_policy(doc):
            doc["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": "0.0.0.0/0"}})

        self.assertReports(port_problems(self.broken("StatefulSet", "gtco-server", probe_port),
                                         self.generated), "livenessProbe")
        self.assertReports(port_problems(self.broken("NetworkPolicy", "gtco-server",
                                                     open_policy), self.generated),
                           "open to everyone")

    def test_security_error(self):
        def root(doc):
            doc["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0

        self.assertReports(security_problems(self.broken("Deployment", "gtco-worker-cuda",
                                                         root)), "runs as root")


if __name__ == "__main__":
    unittest.main()
