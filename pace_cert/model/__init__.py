"""The model stage: the tree-ensemble IR, ONNX reading and writing, onnxruntime."""
