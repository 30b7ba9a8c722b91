"""kube's protobuf message definitions (k8s.io/apimachinery, Apache-2.0) and their generated Python.

The .proto files are upstream's, unchanged, at kube's import paths (`k8s.io` as `k8s/io`), from
kubernetes/apimachinery at commit eed236ceee2c19c2753a3d93ac0631dc20750454. The `*_pb2.py`/`.pyi`
beside them are protoc's output: regenerate with `python -m apis.proto.generate` (generate.py says how),
never edit them by hand.
"""
