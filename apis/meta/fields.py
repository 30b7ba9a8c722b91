"""Field selectors, parsed and matched like k8s.io/apimachinery/pkg/fields (selector.go).

Only `=`, `==` and `!=` joined by commas; a value escapes `\\`, `,` and `=` with a backslash. Parse
errors carry kube's text because kube-apiserver returns them verbatim in a 400 (handlers/get.go:
errors.NewBadRequest(err.Error())). Which fields a kind supports is the registry's business; for custom
resources kube only knows metadata.name (and metadata.namespace when namespaced) and answers
`field label not supported: <label>` for the rest (apiextensions-apiserver crConverter.ConvertFieldLabel);
a kind of a scheme without a conversion of its own (sample-apiserver's) knows both metadata fields and
answers `"<label>" is not a known field selector: ...` (runtime.DefaultMetaV1FieldSelectorConversion).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apis.goformat import go_quote
from apis.meta.labels import SelectorError

EQUALS = "="
NOT_EQUALS = "!="
# "==" is checked before "=" so that "a==b" does not leave "=b" as the value.
_TERM_OPERATORS = ("!=", "==", "=")


METADATA_FIELDS = ("metadata.name", "metadata.namespace")


def custom_resource_label_error(label: str) -> str:
    """apiextensions-apiserver's crConverter.ConvertFieldLabel."""
    return f"field label not supported: {label}"


def default_label_error(label: str) -> str:
    """runtime.DefaultMetaV1FieldSelectorConversion, a scheme's answer for a kind without a field
    label conversion of its own."""
    name, namespace = (go_quote(f) for f in METADATA_FIELDS)
    return f"{go_quote(label)} is not a known field selector: only {name}, {namespace}"


def escape_value(value: str) -> str:
    """fields.EscapeValue: backslash first, then the two characters that would end a value."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """fields.UnescapeValue; errors carry Go's text (an unescaped rune is printed as its number)."""
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    operator: str  # EQUALS or NOT_EQUALS ("==" parses to EQUALS, as kube's hasTerm does)
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        # fields.Set.Get: an absent field reads as "".
        have = fields.get(self.field, "")
        return have == self.value if self.operator == EQUALS else have != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """An AND of terms in kube's order (terms sorted by their raw text before parsing)."""

    terms: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def requirements(self) -> list[tuple[str, str, str]]:
        return [(t.field, t.operator, t.value) for t in self.terms]

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(t.matches(fields) for t in self.terms)

    def requires_exact_match(self, field: str) -> str | None:
        """Go's RequiresExactMatch: the value of the first `field=` term, other terms notwithstanding."""
        for t in self.terms:
            if t.field == field and t.operator == EQUALS:
                return t.value
        return None

    def check_supported(
        self, allowed: Iterable[str], unsupported: Callable[[str], str] = custom_resource_label_error
    ) -> None:
        """Reject the first term on a field the kind cannot select on, in kube's order and in the
        words `unsupported` gives (a custom resource's by default)."""
        allowed_set = set(allowed)
        for t in self.terms:
            if t.field not in allowed_set:
                raise SelectorError(unsupported(t.field))

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.terms)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped; the backslashes stay for unescape_value."""
    if not text:
        return []
    terms: list[str] = []
    start, in_slash = 0, False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator occurrence splits; the field part has no escaping at all."""
    for i in range(len(term)):
        for op in _TERM_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse_field_selector(text: str) -> FieldSelector:
    """fields.ParseSelector."""
    terms: list[FieldRequirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, raw = split
        terms.append(FieldRequirement(field, NOT_EQUALS if op == "!=" else EQUALS, unescape_value(raw)))
    return FieldSelector(tuple(terms))


def one_term_equal_selector(field: str, value: str) -> FieldSelector:
    return FieldSelector((FieldRequirement(field, EQUALS, value),))


def single_name(selector: FieldSelector) -> str | None:
    """The name when the selector is exactly `metadata.name=<x>`, so a list can become a get.

    Stricter than kube's SelectionPredicate.MatchesSingle (any `metadata.name=` term): with a lone term,
    the one object fetched needs no further filtering by the caller.
    """
    if len(selector.terms) == 1:
        t = selector.terms[0]
        if t.field == "metadata.name" and t.operator == EQUALS:
            return t.value
    return None


def object_meta_fields_set(meta: Mapping[str, Any], namespaced: bool) -> dict[str, str]:
    """generic.ObjectMetaFieldsSet / the CR field set: what a field selector is matched against."""
    fields = {"metadata.name": meta.get("name") or ""}
    if namespaced:
        fields["metadata.namespace"] = meta.get("namespace") or ""
    return fields
