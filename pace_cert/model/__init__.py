"""The model stage: the tree-ensemble IR, ONNX reading and writing, onnxruntime, one tree's views.

A single tree's export to scikit-learn (``sklearn_tree``) and its rules and drawing
(``tree_text``) live here, beside the IR, rather than in a package of their own: both are
views of the IR's ``Tree`` (as ``onnx_writer`` is) and import nothing outside this stage.
"""
