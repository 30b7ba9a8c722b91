from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as _generated_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Fischer(_message.Message):
    __slots__ = ("metadata", "disallowedFlunders")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DISALLOWEDFLUNDERS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ObjectMeta
    disallowedFlunders: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ObjectMeta, _Mapping]] = ..., disallowedFlunders: _Optional[_Iterable[str]] = ...) -> None: ...

class FischerList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[Fischer]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[Fischer, _Mapping]]] = ...) -> None: ...

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
    __slots__ = ("reference", "referenceType")
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    REFERENCETYPE_FIELD_NUMBER: _ClassVar[int]
    reference: str
    referenceType: str
    def __init__(self, reference: _Optional[str] = ..., referenceType: _Optional[str] = ...) -> None: ...

class FlunderStatus(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
