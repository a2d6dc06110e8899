# Writes python_written.safetensors, the file tests/test_modules.cpp reads to check that kiln
# reads what Python's safetensors package writes. Run by hand, not by the tests:
#   python3 -m venv venv && venv/bin/pip install safetensors numpy ml_dtypes
#   venv/bin/python tests/data/make_safetensors.py
import pathlib

import ml_dtypes
import numpy as np
import safetensors
from safetensors.numpy import save_file

tensors = {
    "float32_special": np.array([[1.0, -2.5, 3.25e-3], [-0.0, np.inf, np.nan]], dtype=np.float32),
    "float16": np.array([0.5, -1.0, 65504.0], dtype=np.float16),
    "bfloat16": np.array([1.0, -3.0, 0.15625], dtype=ml_dtypes.bfloat16),
    "float64_scalar": np.array(3.141592653589793, dtype=np.float64),
    "int64": np.array([-1, 1 << 40, 7], dtype=np.int64),
    "int32": np.array([-2147483648, 5], dtype=np.int32),
    "int16": np.array([-32768, 32767], dtype=np.int16),
    "int8": np.array([-128, 127], dtype=np.int8),
    "uint8": np.array([0, 255], dtype=np.uint8),
    "uint16": np.array([65535], dtype=np.uint16),
    "uint32": np.array([4294967295], dtype=np.uint32),
    "uint64": np.array([(1 << 63) + 5], dtype=np.uint64),
    "bool": np.array([True, False, True]),
    "empty": np.zeros((0, 4), dtype=np.float32),
    "layer.weight": np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32),
    "layer.bias": np.array([0.5, -0.5], dtype=np.float32),
}
out = pathlib.Path(__file__).with_name("python_written.safetensors")
save_file(tensors, str(out), metadata={"format": "pt", "written_by": "safetensors " + safetensors.__version__})
print(out, out.stat().st_size, "bytes")
