"""Label selectors, parsed and matched like k8s.io/apimachinery/pkg/labels (selector.go).

The lexer and parser follow Go's token by token rather than using a regex grammar, because the
error text (`found 'x', expected: ...`, `unable to parse requirement: ...`) is what a user sees in a
400 and what kubectl prints: kube-apiserver answers a bad `labelSelector` with BadRequest whose message
is exactly the parse error (handlers/get.go ListResource: errors.NewBadRequest(err.Error())), so
`str(SelectorError)` is meant to be used verbatim as the Status message.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apis.meta.field import FieldError, invalid
from apis.meta.names import is_qualified_name, is_valid_label_value


class SelectorError(ValueError):
    """A label or field selector that does not parse; the message is kube's, ready for a 400."""


class Operator(enum.Enum):
    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_INT64_RE = re.compile(r"[+-]?[0-9]+")
_NIL_PATH = "<nil>"  # how Go prints the nil *field.Path that labels.Parse validates keys against


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): no spaces, no underscores, int64 range."""
    if not _INT64_RE.fullmatch(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


def _aggregate(errors: Sequence[FieldError]) -> str:
    """utilerrors.Aggregate.Error(): one message bare, several bracketed, duplicates dropped."""
    msgs = list(dict.fromkeys(str(e) for e in errors))
    return msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        # Gt / Lt: both sides must be integers, otherwise nothing matches.
        if self.key not in labels or len(self.values) != 1:
            return False
        have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op is Operator.GREATER_THAN else have < want

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {op.value} ({values})"
        sign = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{sign}{values}"


def new_requirement(key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
    """labels.NewRequirement: validate key, value count for the operator, and every value."""
    vals = tuple(values)
    errs: list[FieldError] = []
    if key_msgs := is_qualified_name(key):
        errs.append(invalid("key", key, "; ".join(key_msgs)))
    if operator in (Operator.IN, Operator.NOT_IN):
        if not vals:
            errs.append(
                invalid("values", list(vals), "for 'in', 'notin' operators, values set can't be empty")
            )
    elif operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(vals) != 1:
            errs.append(invalid("values", list(vals), "exact-match compatibility requires one single value"))
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        if vals:
            errs.append(
                invalid("values", list(vals), "values set must be empty for exists and does not exist")
            )
    else:
        if len(vals) != 1:
            errs.append(
                invalid("values", list(vals), "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, v in enumerate(vals):
            if _parse_int64(v) is None:
                errs.append(
                    invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
    for i, v in enumerate(vals):
        if msgs := is_valid_label_value(v):
            errs.append(invalid(f"values[{i}][{key}]", v, "; ".join(msgs)))
    if errs:
        raise SelectorError(_aggregate(errs))
    return Requirement(key, operator, vals)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of requirements, sorted by key. `nothing` is labels.Nothing(): it matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The single value `key` must have (=, == or a one-value `in`), as Go's RequiresExactMatch."""
        for r in self.requirements:
            if r.key == key:
                ok = r.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                return r.values[0] if ok and len(r.values) == 1 else None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


NOTHING = LabelSelector(nothing=True)


def _sorted(reqs: Iterable[Requirement]) -> LabelSelector:
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


# ---- lexer -----------------------------------------------------------------------------------------

_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"
_END = "\0"  # Go's read() returns 0 both past the end and for a NUL byte; we mirror both effects


class _Tok(enum.Enum):
    END = enum.auto()
    CLOSED_PAR = enum.auto()
    COMMA = enum.auto()
    DOES_NOT_EXIST = enum.auto()
    DOUBLE_EQUALS = enum.auto()
    EQUALS = enum.auto()
    GREATER_THAN = enum.auto()
    IDENTIFIER = enum.auto()
    IN = enum.auto()
    LESS_THAN = enum.auto()
    NOT_EQUALS = enum.auto()
    NOT_IN = enum.auto()
    OPEN_PAR = enum.auto()


_LITERALS = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.DOES_NOT_EXIST,
    "==": _Tok.DOUBLE_EQUALS,
    "=": _Tok.EQUALS,
    ">": _Tok.GREATER_THAN,
    "in": _Tok.IN,
    "<": _Tok.LESS_THAN,
    "!=": _Tok.NOT_EQUALS,
    "notin": _Tok.NOT_IN,
    "(": _Tok.OPEN_PAR,
}


def _scan_special(text: str, pos: int) -> tuple[str, int]:
    """Longest run of special characters that stays a token: "!=" is one, "=(" is "=" then "("."""
    lit, i = "", pos
    while i < len(text):
        ch = text[i]
        if ch == _END:
            return lit, i + 1  # Go's read() consumed the NUL before stopping
        if ch not in _SPECIAL or text[pos : i + 1] not in _LITERALS:
            return lit, i
        lit, i = text[pos : i + 1], i + 1
    return lit, i


def _scan_identifier(text: str, pos: int) -> tuple[str, int]:
    i = pos
    while i < len(text) and text[i] != _END and text[i] not in _SPECIAL and text[i] not in _WHITESPACE:
        i += 1
    end = i + 1 if i < len(text) and text[i] == _END else i
    return text[pos:i], end


def _lex(text: str) -> list[tuple[_Tok, str]]:
    items: list[tuple[_Tok, str]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= len(text) or text[pos] == _END:
            items.append((_Tok.END, ""))
            return items
        if text[pos] in _SPECIAL:
            lit, pos = _scan_special(text, pos)
            items.append((_LITERALS[lit], lit))
        else:
            lit, pos = _scan_identifier(text, pos)
            items.append((_LITERALS.get(lit, _Tok.IDENTIFIER), lit))


# ---- parser ----------------------------------------------------------------------------------------


class _Parser:
    """Go's Parser: 'in'/'notin' are identifiers wherever a value is expected (context Values)."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _tok(self, index: int, as_value: bool) -> tuple[_Tok, str]:
        tok, lit = self.items[index]
        if as_value and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.IDENTIFIER
        return tok, lit

    def lookahead(self, as_value: bool = True) -> tuple[_Tok, str]:
        return self._tok(self.pos, as_value)

    def consume(self, as_value: bool = True) -> tuple[_Tok, str]:
        self.pos += 1
        return self._tok(self.pos - 1, as_value)

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok is _Tok.END:
                return reqs
            if tok not in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as e:
                raise SelectorError(f"unable to parse requirement: {e}") from None
            tok, lit = self.consume()
            if tok is _Tok.END:
                return reqs
            if tok is not _Tok.COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok2, lit2 = self.lookahead()
            if tok2 not in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                raise SelectorError(f"found '{lit2}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        key, op = self.key_and_inferred_operator()
        if op is not None:
            return new_requirement(key, op)
        op = self.operator()
        values = self.value_set() if op in (Operator.IN, Operator.NOT_IN) else self.exact_value()
        # Go collects values in a sets.String and passes values.List(): sorted, deduplicated.
        return new_requirement(key, op, sorted(values))

    def key_and_inferred_operator(self) -> tuple[str, Operator | None]:
        op: Operator | None = None
        tok, lit = self.consume()
        if tok is _Tok.DOES_NOT_EXIST:
            op = Operator.DOES_NOT_EXIST
            tok, lit = self.consume()
        if tok is not _Tok.IDENTIFIER:
            raise SelectorError(f"found '{lit}', expected: identifier")
        if msgs := is_qualified_name(lit):
            raise SelectorError(str(invalid(_NIL_PATH, lit, "; ".join(msgs))))
        if self.lookahead()[0] in (_Tok.END, _Tok.COMMA) and op is None:
            op = Operator.EXISTS
        return lit, op

    def operator(self) -> Operator:
        tok, lit = self.consume(as_value=False)
        ops = {
            _Tok.IN: Operator.IN,
            _Tok.EQUALS: Operator.EQUALS,
            _Tok.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
            _Tok.GREATER_THAN: Operator.GREATER_THAN,
            _Tok.LESS_THAN: Operator.LESS_THAN,
            _Tok.NOT_IN: Operator.NOT_IN,
            _Tok.NOT_EQUALS: Operator.NOT_EQUALS,
        }
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return ops[tok]

    def value_set(self) -> set[str]:
        tok, lit = self.consume()
        if tok is not _Tok.OPEN_PAR:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_Tok.IDENTIFIER, _Tok.COMMA):
            values = self.identifiers()
            if self.consume()[0] is not _Tok.CLOSED_PAR:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok is _Tok.CLOSED_PAR:  # "()" is the set holding the empty value
            self.consume()
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok is _Tok.IDENTIFIER:
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 is _Tok.CLOSED_PAR:
                    return values
                if tok2 is not _Tok.COMMA:
                    raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            elif tok is _Tok.COMMA:  # "(,", ",," and ",)" each stand for an empty value
                if not values:
                    values.add("")
                tok2 = self.lookahead()[0]
                if tok2 is _Tok.CLOSED_PAR:
                    values.add("")
                    return values
                if tok2 is _Tok.COMMA:
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.lookahead()[0] in (_Tok.END, _Tok.COMMA):
            return {""}
        tok, lit = self.consume()
        if tok is _Tok.IDENTIFIER:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """labels.Parse: "" (or only blanks) is the empty selector that matches everything."""
    return _sorted(_Parser(text).parse())


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """labels.SelectorFromSet: equality on every pair, no validation (the caller validated)."""
    return _sorted(Requirement(k, Operator.EQUALS, (v,)) for k, v in (labels or {}).items())


_EXPRESSION_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_label_selector_dict(d: Mapping[str, Any] | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: None selects nothing, {} selects everything."""
    if d is None:
        return NOTHING
    match_labels: Mapping[str, str] = d.get("matchLabels") or {}
    expressions: Sequence[Mapping[str, Any]] = d.get("matchExpressions") or []
    reqs = [new_requirement(k, Operator.EQUALS, [v]) for k, v in match_labels.items()]
    for expr in expressions:
        name = expr.get("operator", "")
        if name not in _EXPRESSION_OPERATORS:
            # Go: fmt.Errorf("%q is not a valid pod selector operator", ...) — "pod" and all.
            raise SelectorError(f"{json.dumps(name)} is not a valid pod selector operator")
        reqs.append(
            new_requirement(expr.get("key", ""), _EXPRESSION_OPERATORS[name], expr.get("values") or [])
        )
    return _sorted(reqs)
