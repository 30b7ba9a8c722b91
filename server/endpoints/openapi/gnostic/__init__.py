"""gnostic's OpenAPI message definitions (github.com/google/gnostic-models openapiv2/openapiv3).

kube-openapi answers `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (and the v3 one)
with a gnostic `openapi.v2.Document` / `openapi.v3.Document`; kubectl parses that body as one. The
.proto files are gnostic's, unchanged (Apache-2.0); the *_pb2.py beside them are what grpcio-tools'
protoc generated from them (`python -m grpc_tools.protoc -I. --python_out=. OpenAPIv2.proto
OpenAPIv3.proto`, then renamed), so the messages are the real definitions, not a hand-made copy.
encode.py fills them from the JSON documents.
"""
