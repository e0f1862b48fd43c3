"""Types of the compiled runtime (gtco_module.cc)."""
from typing import Any, Dict, List, Mapping, Sequence, Union

import numpy as np

class Model:
    """A loaded artifact; `run` may be called from several threads at once."""
    @property
    def inputs(self) -> List[Dict[str, Any]]:
        """[{"name": ..., "dtype": "float32", "shape": [...]}] in input order."""
    @property
    def outputs(self) -> List[Dict[str, Any]]: ...
    @property
    def kernels(self) -> List[Dict[str, Any]]:
        """Each kernel's workload_key, description, mapping, trace, tuned, hardware,
        median_seconds."""
    def run(self, inputs: Union[Mapping[str, np.ndarray], Sequence[np.ndarray]]
            ) -> Dict[str, np.ndarray]: ...

def load(path: str) -> Model:
    """Raises FileNotFoundError, ValueError (not an artifact) or RuntimeError (corrupt, or a CPU
    feature this host lacks)."""

def set_threads(threads: int) -> None: ...
