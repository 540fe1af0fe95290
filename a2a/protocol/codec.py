"""Shared msgspec encoder and per-type decoders, built once and reused on the hot path.

Requests are decoded liberally, as a ProtoJSON parser does: an object of the schema may name a
field by its lowerCamelCase JSON name or by its original proto (snake_case) name, and an enum
may be its value's name or its number. Free-form values (``metadata``, ``Part.data``, anything
typed ``Any`` or ``dict[str, Any]``) keep their keys exactly as given. The usual all-camelCase
request takes msgspec's typed decoder alone; only a body that names a proto field name of its
schema, or that the typed decoder refuses, goes through ``_Schema`` first.
"""

from __future__ import annotations

import enum
import functools
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
from msgspec import inspect as mi

from ..errors import InvalidParamsError, ParseError, ProtocolError
from .nesting import NestingTooDeepError

__all__ = ["convert_as", "decode_as", "decoder_for", "encode", "encode_kept", "to_builtins"]

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
encode = _encoder.encode

#: Per thread, the buffer ``encode_kept`` encodes into (sized as its last output).
_kept = threading.local()
#: A buffer grown past this is not kept for the next encoding (one huge event would pin it).
_KEPT_BUFFER_MAX = 64 * 1024


def encode_kept(value: Any) -> bytes:
    """``encode``, in a bytes object of exactly its length: for an encoding kept a long time
    (a task's events stay in memory for resuming). ``encode`` leaves the unused end of its
    growing buffer allocated, up to a third of the object (150 B of a 400 B event); encoding
    into a reused buffer and copying out costs no more than that growth does."""
    try:
        buffer: bytearray = _kept.buffer
    except AttributeError:
        buffer = _kept.buffer = bytearray(1024)
    _encoder.encode_into(value, buffer)
    out = bytes(buffer)
    if len(buffer) > _KEPT_BUFFER_MAX:
        _kept.buffer = bytearray(1024)
    return out


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def decoder_for(tp: type[T]) -> msgspec.json.Decoder[T]:
    """A decoder for ``tp``, made on first use and kept."""
    decoder = _decoders.get(tp)
    if decoder is None:
        decoder = _decoders[tp] = msgspec.json.Decoder(tp)
    return decoder


def decode_as(data: bytes | str, tp: type[T], *, what: str = "params") -> T:
    """Decode JSON into ``tp``: malformed JSON is ``ParseError``, a schema mismatch is
    ``InvalidParamsError`` naming the field. Proto field names and enum numbers are accepted."""
    decoder = _decoders.get(tp) or decoder_for(tp)  # one call fewer on the hot path
    if isinstance(data, str):
        data = data.encode()  # the schema's pattern reads bytes
    schema: _Schema | None = None
    try:
        # Two sieves: any snake_case key at all (cheap: enum names are upper case), then one of
        # the schema's proto names (dearer; metadata keys with underscores get this far).
        if _snake_key(data) is None or (schema := _schemas.get(tp) or _schema_of(tp)).proto_names is None:
            value: T = decoder.decode(data)
            return value
        if schema.proto_names.search(data) is None:
            value = decoder.decode(data)
            return value
    except msgspec.ValidationError:
        pass  # perhaps an enum number: normalise, then decode again
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise _undecodable(exc, what) from exc
    except RecursionError:  # the bindings measure the nesting first: a last guard, never a crash
        raise NestingTooDeepError("JSON nested too deeply to decode") from None
    try:
        plain = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise _undecodable(exc, what) from exc
    except RecursionError:
        raise NestingTooDeepError("JSON nested too deeply to decode") from None
    try:
        # Encoded again so that the typed decoder reads it exactly as it reads any body.
        schema = schema or _schemas.get(tp) or _schema_of(tp)
        normalised: T = decoder.decode(encode(schema.normalise(plain)))
        return normalised
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"Invalid {what}: {exc}") from exc


def _undecodable(exc: Exception, what: str) -> ProtocolError:
    """Why msgspec could not decode a body: a number too large for any field (valid JSON, so a
    wrong argument: -32602), else text that is not JSON or not UTF-8 (-32700)."""
    if isinstance(exc, msgspec.DecodeError) and "out of range" in str(exc):
        return InvalidParamsError(f"Invalid {what}: {exc}")
    return ParseError(f"Request body is not valid JSON (UTF-8): {exc}")


def convert_as(fields: Mapping[str, Any], tp: type[T], *, what: str = "params") -> T:
    """``fields`` (plain values, strings allowed for numbers and booleans, as in a query string)
    as ``tp``, accepting proto field names and enum numbers as ``decode_as`` does."""
    schema = _schemas.get(tp) or _schema_of(tp)
    try:
        value: T = msgspec.convert(schema.normalise(dict(fields)), tp, strict=False)
        return value
    except (msgspec.ValidationError, UnicodeError) as exc:  # UnicodeError: a query that is not UTF-8
        raise InvalidParamsError(f"Invalid {what}: {exc}") from exc


def to_builtins(obj: Any) -> Any:
    """Plain dicts/lists in wire form (camelCase, enum names), e.g. for printing."""
    return msgspec.to_builtins(obj)


# ---- proto field names and enum numbers ----------------------------------------------------

#: Finds a key that may be a proto field name: lower case, with an underscore, before a colon.
_snake_key = re.compile(rb'_[a-z0-9]+"\s*:').search

#: Rewrites one plain JSON value of a known type into its camelCase / enum-name form.
_Normalise = Callable[[Any], Any]


class _Schema:
    """How to rename the keys of one Struct type's objects, and those of the objects inside it."""

    def __init__(self) -> None:
        #: proto (snake_case) name -> JSON name, for the fields whose names differ.
        self.json_names: dict[str, str] = {}
        #: JSON name -> how to normalise that field's value (only fields that may need it).
        self.children: dict[str, _Normalise] = {}
        #: Finds a quoted proto field name of this type or any type inside it (``None``: none has one).
        self.proto_names: re.Pattern[bytes] | None = None

    def normalise(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value  # the typed decoder says what is wrong with it
        fields: dict[str, Any] = value
        out: dict[str, Any] = {}
        for key, item in fields.items():
            name = self.json_names.get(key, key)
            if name in out:
                raise InvalidParamsError(
                    f"Invalid params: field {name!r} is given twice, by its JSON name and its proto name"
                )
            child = self.children.get(name)
            out[name] = item if child is None else child(item)
        return out


_schemas: dict[Any, _Schema] = {}


def _schema_of(tp: Any) -> _Schema:
    """The ``_Schema`` of a Struct type, built on first use (recursive types included) and kept."""
    schema = _schemas.get(tp)
    if schema is not None:
        return schema
    info = mi.type_info(tp)
    schema = _schemas[tp] = _Schema()  # registered first: a type may contain itself
    proto_names: set[str] = set()
    if isinstance(info, mi.StructType):
        for field in info.fields:
            if field.name != field.encode_name:
                schema.json_names[field.name] = field.encode_name
            child = _normaliser(field.type, proto_names, {tp})
            if child is not None:
                schema.children[field.encode_name] = child
        proto_names.update(schema.json_names)
    if proto_names:
        alternatives = "|".join(re.escape(name) for name in sorted(proto_names))
        schema.proto_names = re.compile(f'"(?:{alternatives})"'.encode())
    return schema


def _normaliser(info: mi.Type, proto_names: set[str], seen: set[Any]) -> _Normalise | None:
    """How to normalise a value of this type (``None``: it never needs it: scalars, free-form
    values); collects the proto field names found inside it into ``proto_names``."""
    if isinstance(info, mi.StructType):
        cls = info.cls
        if cls not in seen:
            seen = seen | {cls}
            for field in info.fields:
                if field.name != field.encode_name:
                    proto_names.add(field.name)
                _normaliser(field.type, proto_names, seen)
        return lambda value: _schema_of(cls).normalise(value)
    if isinstance(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        item = _normaliser(info.item_type, proto_names, seen)
        return None if item is None else functools.partial(_each, item)
    if isinstance(info, mi.UnionType):
        found = [n for member in info.types if (n := _normaliser(member, proto_names, seen)) is not None]
        return found[0] if len(found) == 1 else None  # a union of two kinds of object: left as given
    if isinstance(info, mi.EnumType):
        return functools.partial(_enum_name, _by_number(info.cls))
    return None  # scalars, Any, dict[str, Any]: nothing to rename


def _each(item: _Normalise, value: Any) -> Any:
    return [item(v) for v in value] if isinstance(value, list) else value


@functools.cache
def _by_number(cls: type[enum.Enum]) -> dict[int, Any]:
    """An enum's values by their proto numbers: the members are declared in the proto's order,
    from 0 (``*_UNSPECIFIED``), as ``a2a.proto`` numbers them."""
    return {number: member.value for number, member in enumerate(cls)}


def _enum_name(by_number: dict[int, Any], value: Any) -> Any:
    """ProtoJSON's enum forms: the value's name (kept) or its number (a query gives it as a string)."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return by_number.get(value, value)
    return value
