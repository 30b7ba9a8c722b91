from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as _generated_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MenuItem(_message.Message):
    __slots__ = ("metadata", "toppings", "price", "available")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TOPPINGS_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ObjectMeta
    toppings: _containers.RepeatedCompositeFieldContainer[MenuItemTopping]
    price: float
    available: bool
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ObjectMeta, _Mapping]] = ..., toppings: _Optional[_Iterable[_Union[MenuItemTopping, _Mapping]]] = ..., price: _Optional[float] = ..., available: _Optional[bool] = ...) -> None: ...

class MenuItemList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[MenuItem]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[MenuItem, _Mapping]]] = ...) -> None: ...

class MenuItemTopping(_message.Message):
    __slots__ = ("name", "quantity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    quantity: int
    def __init__(self, name: _Optional[str] = ..., quantity: _Optional[int] = ...) -> None: ...

class Pizza(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ObjectMeta
    spec: PizzaSpec
    status: PizzaStatus
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PizzaSpec, _Mapping]] = ..., status: _Optional[_Union[PizzaStatus, _Mapping]] = ...) -> None: ...

class PizzaList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[Pizza]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[Pizza, _Mapping]]] = ...) -> None: ...

class PizzaSpec(_message.Message):
    __slots__ = ("toppings",)
    TOPPINGS_FIELD_NUMBER: _ClassVar[int]
    toppings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, toppings: _Optional[_Iterable[str]] = ...) -> None: ...

class PizzaStatus(_message.Message):
    __slots__ = ("cost", "observedGeneration")
    COST_FIELD_NUMBER: _ClassVar[int]
    OBSERVEDGENERATION_FIELD_NUMBER: _ClassVar[int]
    cost: float
    observedGeneration: int
    def __init__(self, cost: _Optional[float] = ..., observedGeneration: _Optional[int] = ...) -> None: ...

class Topping(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ObjectMeta
    spec: ToppingSpec
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ToppingSpec, _Mapping]] = ...) -> None: ...

class ToppingList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[Topping]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[Topping, _Mapping]]] = ...) -> None: ...

class ToppingSpec(_message.Message):
    __slots__ = ("cost",)
    COST_FIELD_NUMBER: _ClassVar[int]
    cost: float
    def __init__(self, cost: _Optional[float] = ...) -> None: ...
