from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as _generated_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Flunder(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ObjectMeta
    spec: FlunderSpec
    status: FlunderStatus
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[FlunderSpec, _Mapping]] = ..., status: _Optional[_Union[FlunderStatus, _Mapping]] = ...) -> None: ...

class FlunderList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[Flunder]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[Flunder, _Mapping]]] = ...) -> None: ...

class FlunderSpec(_message.Message):
    __slots__ = ("flunderReference", "fischerReference", "referenceType")
    FLUNDERREFERENCE_FIELD_NUMBER: _ClassVar[int]
    FISCHERREFERENCE_FIELD_NUMBER: _ClassVar[int]
    REFERENCETYPE_FIELD_NUMBER: _ClassVar[int]
    flunderReference: str
    fischerReference: str
    referenceType: str
    def __init__(self, flunderReference: _Optional[str] = ..., fischerReference: _Optional[str] = ..., referenceType: _Optional[str] = ...) -> None: ...

class FlunderStatus(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
