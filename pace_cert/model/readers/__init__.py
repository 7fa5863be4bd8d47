"""One recogniser per exporter pattern; ``pace_cert/model/onnx_reader.py`` holds the table."""
