#!/usr/bin/python3
"""The model zoo: real architectures (torchvision, Hugging Face transformers from their configs)
with random weights, exported to ONNX (opset 17, batch 1, eval mode, constant folding), each with
one .npz of sample inputs and ONNX Runtime's outputs on them (fp32, CPU execution provider), which
bench/zoo/run_zoo.py checks GTCO's artifacts against.

    PYTHONPATH=.deps/transformers:.deps/python /usr/bin/python3 bench/zoo/export_models.py OUT_DIR
        [--models a,b,c | --ci] [--list] [--force] [--timeout SECONDS]

Writes, per model NAME, OUT_DIR/NAME.onnx, OUT_DIR/NAME.npz (arrays "input.<name>" and
"output.<name>": ONNX Runtime's outputs) and OUT_DIR/NAME.json (family, inputs and outputs with
shapes and dtypes, ONNX op types, file size, export seconds, the worst difference between
ONNX Runtime and PyTorch), or for a model that does not export or does not run in ONNX Runtime
OUT_DIR/NAME.json with status "failed" and the reason; then OUT_DIR/zoo.json, all of them.
Nothing is downloaded: torchvision models are built with weights=None, transformers models from
their configs (a few layers of the real architecture, sequences of 64-128 tokens); batch norm
statistics are calibrated on random inputs (calibrate_batchnorm), so that random weights give
live activations of a trained model's scale. Each model is
exported in a process of its own (one thread), so a crash or a hang costs only that model; a
model already exported (its .json says ok and its files are there) is kept unless --force.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OPSET = 17
SEQ = 128  # tokens of the text models

# The subset CI runs: small models that tune, export and time in seconds each.
CI_MODELS = ["squeezenet1_1", "mobilenet_v3_small", "roberta_tiny", "shufflenet_v2_x1_0_112"]

REGISTRY = {}  # name -> (family, builder)


def model(name, family, **options):
    """Registers the decorated builder under `name` (builder(**options) returns a Spec)."""
    def register(builder):
        REGISTRY[name] = (family, lambda: builder(**options))
        return builder
    return register


class Spec:
    """What to export: `module` (eval mode) called with `inputs` (name -> example tensor, in
    order) returning the tensors named `outputs` (a tuple, or one tensor)."""

    def __init__(self, module, inputs, outputs):
        self.module, self.inputs, self.outputs = module, inputs, outputs


def _torch():
    import torch
    return torch


def wrap(module, input_names, pick):
    """A module whose forward takes the inputs positionally (as ONNX export passes them) and
    calls `module` with them by keyword (positionally when `input_names` is None);
    `pick(result)` returns the output tensors."""
    torch = _torch()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = module  # node names read /model/...

        def forward(self, *args):
            if input_names is None:
                return pick(self.model(*args))
            return pick(self.model(**dict(zip(input_names, args))))

    return Wrapped().eval()


def image(size=224):
    return _torch().randn(1, 3, size, size)


def tokens(vocab, seq=SEQ, names=("input_ids", "attention_mask")):
    torch = _torch()
    inputs = {"input_ids": torch.randint(0, vocab, (1, seq), dtype=torch.int64)}
    if "attention_mask" in names:
        inputs["attention_mask"] = torch.ones(1, seq, dtype=torch.int64)
    return inputs


# ---- torchvision classification -------------------------------------------------------------

def _classifier(arch, size=224, **kwargs):
    import torchvision
    net = getattr(torchvision.models, arch)(weights=None, **kwargs).eval()
    return Spec(net, {"image": image(size)}, ["logits"])


for _arch in ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
              "efficientnet_b0", "densenet121", "squeezenet1_1", "shufflenet_v2_x1_0",
              "mnasnet1_0", "regnet_y_400mf", "resnext50_32x4d", "convnext_tiny", "swin_t",
              "alexnet", "vgg11"]:
    model(_arch, "torchvision classification", arch=_arch)(_classifier)
model("shufflenet_v2_x1_0_112", "torchvision classification", arch="shufflenet_v2_x1_0",
      size=112)(_classifier)

# GoogLeNet without its training-only auxiliary classifiers.
model("googlenet", "torchvision classification", arch="googlenet", aux_logits=False,
      init_weights=True)(_classifier)


@model("vit_b_32", "torchvision classification")
def vit_b_32():
    spec = _classifier("vit_b_32")
    # torchvision zero-initializes ViT's head: every logit would be 0.
    _torch().nn.init.normal_(spec.module.heads.head.weight, std=0.02)
    return spec


# ---- torchvision segmentation (the dict output's "out") -------------------------------------

def _segmentation(arch, size=224):
    import torchvision
    net = getattr(torchvision.models.segmentation, arch)(
        weights=None, weights_backbone=None, aux_loss=False).eval()
    return Spec(wrap(net, None, lambda out: out["out"]), {"image": image(size)}, ["out"])


for _arch in ["fcn_resnet50", "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large"]:
    model(_arch, "torchvision segmentation", arch=_arch)(_segmentation)


# ---- torchvision detection: the feature-pyramid backbones (no heads, no NMS) ----------------

def _fpn_backbone(arch, size=320):
    import torchvision
    detector = getattr(torchvision.models.detection, arch)(weights=None, weights_backbone=None)
    backbone = detector.backbone.eval()
    with _torch().no_grad():
        levels = list(backbone(image(size)))  # the pyramid's levels: "0", "1", ..., "pool"
    return Spec(wrap(backbone, None, lambda features: tuple(features.values())),
                {"image": image(size)}, [f"feature_{level}" for level in levels])


model("fasterrcnn_mobilenet_v3_large_fpn_backbone", "torchvision detection backbone",
      arch="fasterrcnn_mobilenet_v3_large_fpn")(_fpn_backbone)
model("retinanet_resnet50_fpn_backbone", "torchvision detection backbone",
      arch="retinanet_resnet50_fpn")(_fpn_backbone)


# ---- transformers, from configs -------------------------------------------------------------

def _hf(model_class, config, inputs, outputs):
    """`model_class(config)` in eval mode, called with `inputs` by keyword, exported with the
    fields `outputs` of its result."""
    import transformers
    net = getattr(transformers, model_class)(config).eval()
    return Spec(wrap(net, list(inputs), lambda out: tuple(out[k] for k in outputs)), inputs,
                outputs)


def _config(name, **kwargs):
    import transformers
    kwargs.setdefault("attn_implementation", "eager")
    config = getattr(transformers, name)(**kwargs)
    if hasattr(config, "_attn_implementation"):
        config._attn_implementation = "eager"
    return config


TEXT_OUT = ["last_hidden_state", "pooler_output"]


@model("bert", "transformers encoder")
def bert():  # bert-base dimensions, 2 layers
    config = _config("BertConfig", num_hidden_layers=2)
    return _hf("BertModel", config, tokens(config.vocab_size), TEXT_OUT)


@model("bert_tiny", "transformers encoder")
def bert_tiny():  # google/bert_uncased_L-2_H-128_A-2's dimensions
    config = _config("BertConfig", num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                     intermediate_size=512)
    return _hf("BertModel", config, tokens(config.vocab_size), TEXT_OUT)


@model("roberta", "transformers encoder")
def roberta():
    config = _config("RobertaConfig", num_hidden_layers=2, vocab_size=50265,
                     max_position_embeddings=514, type_vocab_size=1, pad_token_id=1)
    inputs = tokens(config.vocab_size)
    inputs["input_ids"][inputs["input_ids"] == config.pad_token_id] = 2  # no padding
    return _hf("RobertaModel", config, inputs, TEXT_OUT)


@model("roberta_tiny", "transformers encoder")
def roberta_tiny():  # RoBERTa at bert_tiny's dimensions (CI: its position ids are fallback steps)
    config = _config("RobertaConfig", num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                     intermediate_size=512, vocab_size=1000, max_position_embeddings=514,
                     type_vocab_size=1, pad_token_id=1)
    inputs = tokens(config.vocab_size)
    inputs["input_ids"][inputs["input_ids"] == config.pad_token_id] = 2  # no padding
    return _hf("RobertaModel", config, inputs, TEXT_OUT)


@model("albert", "transformers encoder")
def albert():  # albert-base-v2 dimensions (the config's default is xxlarge), 2 layers
    config = _config("AlbertConfig", num_hidden_layers=2, hidden_size=768,
                     num_attention_heads=12, intermediate_size=3072)
    return _hf("AlbertModel", config, tokens(config.vocab_size), TEXT_OUT)


@model("distilbert", "transformers encoder")
def distilbert():
    config = _config("DistilBertConfig", n_layers=2)
    return _hf("DistilBertModel", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("electra", "transformers encoder")
def electra():  # electra-small-discriminator dimensions, 2 layers
    config = _config("ElectraConfig", num_hidden_layers=2)
    return _hf("ElectraModel", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("mobilebert", "transformers encoder")
def mobilebert():
    config = _config("MobileBertConfig", num_hidden_layers=2)
    return _hf("MobileBertModel", config, tokens(config.vocab_size), TEXT_OUT)


@model("mpnet", "transformers encoder")
def mpnet():
    config = _config("MPNetConfig", num_hidden_layers=2)
    inputs = tokens(config.vocab_size)
    inputs["input_ids"][inputs["input_ids"] == config.pad_token_id] = 2
    return _hf("MPNetModel", config, inputs, TEXT_OUT)


@model("squeezebert", "transformers encoder")
def squeezebert():
    config = _config("SqueezeBertConfig", num_hidden_layers=2)
    return _hf("SqueezeBertModel", config, tokens(config.vocab_size), TEXT_OUT)


@model("deberta_v2", "transformers encoder")
def deberta_v2():  # deberta-v3-base dimensions, 2 layers
    config = _config("DebertaV2Config", num_hidden_layers=2, hidden_size=768,
                     num_attention_heads=12, intermediate_size=3072, vocab_size=128100,
                     relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
                     share_att_key=True, pos_att_type=["p2c", "c2p"], max_relative_positions=-1,
                     position_biased_input=False, layer_norm_eps=1e-7)
    return _hf("DebertaV2Model", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("t5_encoder", "transformers encoder")
def t5_encoder():  # t5-small dimensions, 2 layers
    config = _config("T5Config", num_layers=2, use_cache=False)
    return _hf("T5EncoderModel", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("bart", "transformers encoder-decoder")
def bart():  # bart-base dimensions, 2 + 2 layers, decoder inputs from the shifted input ids
    config = _config("BartConfig", encoder_layers=2, decoder_layers=2, d_model=768,
                     encoder_attention_heads=12, decoder_attention_heads=12,
                     encoder_ffn_dim=3072, decoder_ffn_dim=3072, use_cache=False)
    torch = _torch()
    inputs = tokens(config.vocab_size, seq=64)
    inputs["decoder_input_ids"] = torch.randint(0, config.vocab_size, (1, 64), dtype=torch.int64)
    return _hf("BartModel", config, inputs, ["last_hidden_state", "encoder_last_hidden_state"])


@model("gpt2", "transformers decoder")
def gpt2():
    config = _config("GPT2Config", n_layer=2, use_cache=False)
    return _hf("GPT2Model", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("opt", "transformers decoder")
def opt():  # opt-125m dimensions, 2 layers
    config = _config("OPTConfig", num_hidden_layers=2, use_cache=False)
    return _hf("OPTModel", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("gpt_neo", "transformers decoder")
def gpt_neo():  # gpt-neo-125M dimensions, 2 layers (one global, one local attention)
    config = _config("GPTNeoConfig", num_layers=2, hidden_size=768, num_heads=12,
                     attention_types=[[["global", "local"], 1]], use_cache=False)
    return _hf("GPTNeoModel", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("llama", "transformers decoder")
def llama():  # a small Llama (TinyLlama's head size and vocabulary), 2 layers
    config = _config("LlamaConfig", num_hidden_layers=2, hidden_size=512, intermediate_size=1408,
                     num_attention_heads=8, num_key_value_heads=4, vocab_size=32000,
                     use_cache=False)
    return _hf("LlamaModel", config, tokens(config.vocab_size), ["last_hidden_state"])


@model("wav2vec2", "transformers audio")
def wav2vec2():  # wav2vec2-base dimensions, 2 layers, 1 s of 16 kHz audio
    config = _config("Wav2Vec2Config", num_hidden_layers=2)
    return _hf("Wav2Vec2Model", config, {"input_values": _torch().randn(1, 16000)},
               ["last_hidden_state", "extract_features"])


@model("whisper_encoder", "transformers audio")
def whisper_encoder():  # whisper-tiny's encoder (4 layers), 2.56 s of 80-bin log-mel frames
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    config = _config("WhisperConfig", d_model=384, encoder_layers=4, encoder_attention_heads=6,
                     encoder_ffn_dim=1536, decoder_layers=4, decoder_attention_heads=6,
                     decoder_ffn_dim=1536, num_mel_bins=80, max_source_positions=128)
    assert transformers.WhisperConfig
    net = WhisperEncoder(config).eval()
    inputs = {"input_features": _torch().randn(1, 80, 2 * config.max_source_positions)}
    return Spec(wrap(net, list(inputs), lambda out: out["last_hidden_state"]), inputs,
                ["last_hidden_state"])


VISION_OUT = ["last_hidden_state", "pooler_output"]


@model("vit_hf", "transformers vision")
def vit_hf():  # vit-base-patch16-224 dimensions, 2 layers
    config = _config("ViTConfig", num_hidden_layers=2)
    return _hf("ViTModel", config, {"pixel_values": image()}, VISION_OUT)


@model("deit", "transformers vision")
def deit():  # deit-base-distilled dimensions (class and distillation tokens), 2 layers
    config = _config("DeiTConfig", num_hidden_layers=2)
    return _hf("DeiTModel", config, {"pixel_values": image()}, VISION_OUT)


@model("beit", "transformers vision")
def beit():  # beit-base-patch16-224 (relative position bias per layer, mean pooling), 2 layers
    config = _config("BeitConfig", num_hidden_layers=2, use_relative_position_bias=True,
                     use_mean_pooling=True)
    return _hf("BeitModel", config, {"pixel_values": image()}, VISION_OUT)


@model("clip_vision", "transformers vision")
def clip_vision():  # clip-vit-base-patch32's vision tower, 2 layers
    config = _config("CLIPVisionConfig", num_hidden_layers=2)
    return _hf("CLIPVisionModel", config, {"pixel_values": image()}, VISION_OUT)


@model("segformer", "transformers vision")
def segformer():  # segformer-b0's encoder (its 4 stages, 1-2 blocks each)
    config = _config("SegformerConfig", depths=[1, 1, 1, 1])
    return _hf("SegformerModel", config, {"pixel_values": image()}, ["last_hidden_state"])


@model("mobilevit", "transformers vision")
def mobilevit():  # mobilevit-small
    config = _config("MobileViTConfig")
    return _hf("MobileViTModel", config, {"pixel_values": image(256)}, VISION_OUT)


# ---- one model, in its own process ----------------------------------------------------------

NP_DTYPES = {"int64": "i64", "int32": "i32", "float32": "f32"}


def seed_for(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def calibrate_batchnorm(module, inputs, batch=4, passes=2):
    """Sets the running mean and variance of every BatchNorm layer to the statistics of random
    inputs shaped like `inputs` (batch `batch`), as if the model had been trained on them. Fresh
    running statistics (mean 0, variance 1) make batch norm an identity, and with random weights
    the activations of a deep network then shrink or grow layer by layer (GoogLeNet's logits
    came out as its classifier's bias whatever the image, DeepLabV3's changed by 1e-8 from one
    image to another); calibrated, each normalized layer starts from unit variance, as in a
    trained model. Models without batch norm, or with integer inputs, are left as they are."""
    torch = _torch()
    layers = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not layers or any(v.dtype != torch.float32 for v in inputs.values()):
        return 0
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None  # a cumulative average over the passes
    module.train()
    with torch.no_grad():
        for _ in range(passes):
            module(*[torch.randn(batch, *v.shape[1:]) for v in inputs.values()])
    module.eval()
    return len(layers)


def export_one(name, out_dir):
    """Exports model `name` into out_dir, runs it in ONNX Runtime, writes NAME.npz; returns its
    record (status "ok") or raises."""
    torch = _torch()
    import numpy as np
    import onnx
    import onnxruntime as ort
    torch.set_num_threads(1)
    torch.manual_seed(seed_for(name))
    family, builder = REGISTRY[name]
    record = {"name": name, "family": family, "opset": OPSET}
    start = time.time()
    spec = builder()
    record["batchnorm_calibrated"] = calibrate_batchnorm(spec.module, spec.inputs)
    spec.module.eval()
    record["build_seconds"] = round(time.time() - start, 2)
    args = tuple(spec.inputs.values())
    with torch.no_grad():
        expected = spec.module(*args)
    if not isinstance(expected, (tuple, list)):
        expected = (expected,)
    path = os.path.join(out_dir, f"{name}.onnx")
    start = time.time()
    torch.onnx.export(spec.module, args, path, opset_version=OPSET, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL, input_names=list(spec.inputs),
                      output_names=list(spec.outputs))
    record["export_seconds"] = round(time.time() - start, 2)
    record["onnx_bytes"] = os.path.getsize(path)
    proto = onnx.load(path, load_external_data=False)
    record["parameters"] = int(sum(np.prod(t.dims) for t in proto.graph.initializer))
    ops = {}
    for node in proto.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    record["ops"] = dict(sorted(ops.items()))
    graph_inputs = {i.name for i in proto.graph.input}
    # Inputs the export dropped (unused by the traced graph) are left out of the feeds.
    feeds = {k: v.numpy() for k, v in spec.inputs.items() if k in graph_inputs}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    start = time.time()
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    got = session.run(None, feeds)
    record["ort_first_run_seconds"] = round(time.time() - start, 2)
    names = [o.name for o in session.get_outputs()]
    worst = 0.0
    for want, have in zip(expected, got):
        want = want.detach().numpy()
        scale = max(float(np.max(np.abs(want))), 1e-30)
        worst = max(worst, float(np.max(np.abs(want - have))) / scale)
    record["ort_vs_torch_rel_diff"] = worst
    record["inputs"] = [{"name": k, "shape": list(v.shape), "dtype": NP_DTYPES[str(v.dtype)]}
                        for k, v in feeds.items()]
    record["outputs"] = [{"name": n, "shape": list(v.shape), "dtype": NP_DTYPES.get(
        str(v.dtype), str(v.dtype))} for n, v in zip(names, got)]
    arrays = {f"input.{k}": v for k, v in feeds.items()}
    arrays.update({f"output.{n}": v for n, v in zip(names, got)})
    np.savez(os.path.join(out_dir, f"{name}.npz"), **arrays)
    record["status"] = "ok"
    return record


def load_npz(path):
    """(inputs, outputs): name -> array dicts from an .npz export_one wrote."""
    import numpy as np
    inputs, outputs = {}, {}
    with np.load(path) as data:
        for key in data.files:
            kind, _, name = key.partition(".")
            (inputs if kind == "input" else outputs)[name] = data[key]
    return inputs, outputs


def child_env():
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    paths = [os.path.join(ROOT, ".deps", "transformers"), os.path.join(ROOT, ".deps", "python")]
    paths = [p for p in paths if os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    env["TRANSFORMERS_OFFLINE"] = "1"
    env["HF_HUB_OFFLINE"] = "1"
    return env


def ensure(name, out_dir, force=False, timeout=1800, log=print):
    """Exports `name` into out_dir in a child process unless done already; returns its record
    (status "ok" or "failed" with "reason")."""
    record_path = os.path.join(out_dir, f"{name}.json")
    if not force and os.path.exists(record_path):
        with open(record_path) as f:
            record = json.load(f)
        if record.get("status") != "ok" or all(
                os.path.exists(os.path.join(out_dir, f"{name}.{ext}")) for ext in ("onnx", "npz")):
            return record
    if name not in REGISTRY:
        raise KeyError(f"unknown model {name!r} (export_models.py --list)")
    for ext in ("onnx", "npz", "json"):
        if os.path.exists(os.path.join(out_dir, f"{name}.{ext}")):
            os.remove(os.path.join(out_dir, f"{name}.{ext}"))
    start = time.time()
    try:
        done = subprocess.run([sys.executable, os.path.abspath(__file__), out_dir, "--one", name],
                              capture_output=True, text=True, timeout=timeout, env=child_env())
        failed = None if done.returncode == 0 and os.path.exists(record_path) else (
            _reason(done.stderr) or f"exit {done.returncode}")
        stderr = done.stderr
    except subprocess.TimeoutExpired as e:
        failed, stderr = f"timed out after {timeout} s", (e.stderr or b"").decode(errors="replace")
    if failed:
        record = {"name": name, "family": REGISTRY[name][0], "status": "failed", "reason": failed,
                  "seconds": round(time.time() - start, 1)}
        with open(os.path.join(out_dir, f"{name}.log"), "w") as f:
            f.write(stderr)
        with open(record_path, "w") as f:
            json.dump(record, f, indent=1)
        log(f"{name}: FAILED ({failed})")
        return record
    with open(record_path) as f:
        record = json.load(f)
    record["seconds"] = round(time.time() - start, 1)
    with open(record_path, "w") as f:
        json.dump(record, f, indent=1)
    log(f"{name}: ok, {record['onnx_bytes'] / 2**20:.1f} MiB, export "
        f"{record['export_seconds']:.1f} s ({record['seconds']:.0f} s in all), ORT vs torch "
        f"{record['ort_vs_torch_rel_diff']:.1e}")
    return record


def _reason(stderr):
    """The last exception line of a child's traceback (what failed, in one line)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line or line.startswith(("RuntimeError", "onnx")):
            return line[:400]
    return lines[-1][:400] if lines else ""


def select(models, ci):
    if ci:
        return list(CI_MODELS)
    if models:
        names = [m for m in models.split(",") if m]
        unknown = [m for m in names if m not in REGISTRY]
        if unknown:
            raise SystemExit(f"unknown models: {', '.join(unknown)} (see --list)")
        return names
    return [n for n in REGISTRY if n not in CI_ONLY]


# Variants for CI only: the full zoo has their full-size model.
CI_ONLY = {"shufflenet_v2_x1_0_112"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?")
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument("--ci", action="store_true", help="the CI subset: " + ",".join(CI_MODELS))
    parser.add_argument("--list", action="store_true", help="print the models and exit")
    parser.add_argument("--force", action="store_true", help="export again what is there")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per model")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child: export this model
    args = parser.parse_args()
    if args.list:
        for name, (family, _) in REGISTRY.items():
            print(f"{name:45s} {family}{'  (CI)' if name in CI_MODELS else ''}")
        return 0
    if not args.out_dir:
        parser.error("OUT_DIR is needed")
    os.makedirs(args.out_dir, exist_ok=True)
    if args.one:
        record = export_one(args.one, args.out_dir)
        with open(os.path.join(args.out_dir, f"{args.one}.json"), "w") as f:
            json.dump(record, f, indent=1)
        return 0
    records = [ensure(name, args.out_dir, args.force, args.timeout)
               for name in select(args.models, args.ci)]
    ok = [r for r in records if r["status"] == "ok"]
    print(f"{len(ok)} of {len(records)} models exported and run in ONNX Runtime")
    # zoo.json: every model's record in the folder (this run's and earlier ones').
    everything = []
    for name in REGISTRY:
        path = os.path.join(args.out_dir, f"{name}.json")
        if os.path.exists(path):
            with open(path) as f:
                everything.append(json.load(f))
    with open(os.path.join(args.out_dir, "zoo.json"), "w") as f:
        json.dump(everything, f, indent=1)
    print(f"{args.out_dir}/zoo.json: {sum(r['status'] == 'ok' for r in everything)} of "
          f"{len(everything)} models there ok")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
