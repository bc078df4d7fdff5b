# SPDX-License-Identifier: Apache-2.0
"""Writes a small ONNX model with Debian's python3-onnx: LAYERS x (MatMul by a WIDTH x WIDTH
matrix, then Relu) on a [ROWS, WIDTH] float input named "x", output "y". Random weights;
only the cost per session Run matters to the tests (there is no model hub here).

  write_onnx.py OUT.onnx [--width N] [--rows N] [--layers N]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    nodes, weights, last = [], [], "x"
    for i in range(a.layers):
        w = (rng.standard_normal((a.width, a.width)) / np.sqrt(a.width)).astype(np.float32)
        weights.append(numpy_helper.from_array(w, name=f"w{i}"))
        out = "y" if i == a.layers - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [last, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [out]))
        last = out
    graph = helper.make_graph(
        nodes, "tailcause-test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [a.rows, a.width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [a.rows, a.width])],
        initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what ONNX Runtime releases since 1.14 read
    onnx.checker.check_model(model)
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
