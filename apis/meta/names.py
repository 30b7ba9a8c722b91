"""Name, label-key and label-value rules with kube's exact messages.

Two Go packages supply these messages and they differ in one word: k8s.io/apimachinery/pkg/util/validation
(object and namespace names: "must be no more than 253 characters") and .../pkg/api/validate/content
(label keys and values, including a key's DNS prefix: "must be no more than 63 bytes"). Clients grep
both, so each check keeps the wording of the package kube calls for it. Lengths are counted in UTF-8
bytes, as Go's len() does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
LABEL_KEY_NAME_MAX_LENGTH = 63

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + LABEL_KEY_FMT + ")?"

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)

_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)
_LABEL_KEY_RE = re.compile(LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)

# A name validator: (name, is_prefix) -> messages, like Go's ValidateNameFunc.
NameFn = Callable[[str, bool], list[str]]


def byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _matches(pattern: re.Pattern[str], value: str) -> bool:
    # Go anchors with ^...$ and its $ never matches before a trailing newline; fullmatch agrees.
    return pattern.fullmatch(value) is not None


def max_len_error(length: int) -> str:
    """util/validation.MaxLenError (object names, namespaces)."""
    return f"must be no more than {length} characters"


def max_bytes_error(length: int) -> str:
    """validate/content.MaxLenError (label keys and values)."""
    return f"must be no more than {length} bytes"


def empty_error() -> str:
    return "must be non-empty"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Go's RegexError, down to the double space before each " or "."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {parts}regex used for validation is '{fmt}')"


def _subdomain(value: str, too_long: Callable[[int], str]) -> list[str]:
    errs: list[str] = []
    if byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(too_long(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _matches(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """util/validation.IsDNS1123Subdomain: object names (at most 253, lower case, dots allowed)."""
    return _subdomain(value, max_len_error)


def is_dns1123_label(value: str) -> list[str]:
    """util/validation.IsDNS1123Label: namespace names (at most 63, no dots)."""
    errs: list[str] = []
    if byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _matches(_DNS1123_LABEL_RE, value):
        if _matches(_DNS1123_SUBDOMAIN_RE, value):
            # A valid subdomain but not a label: with length checked already, it must be the dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs: list[str] = []
    if byte_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _matches(_DNS1035_LABEL_RE, value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """content.IsLabelKey: `[prefix/]name`, used for label keys, annotation keys and finalizers."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in _subdomain(prefix, max_bytes_error))
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif byte_len(name) > LABEL_KEY_NAME_MAX_LENGTH:
        errs.append("name part " + max_bytes_error(LABEL_KEY_NAME_MAX_LENGTH))
    if not _matches(_LABEL_KEY_RE, name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """content.IsLabelValue: empty, or at most 63 bytes of [-A-Za-z0-9_.] framed by alphanumerics."""
    errs: list[str] = []
    if byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_bytes_error(LABEL_VALUE_MAX_LENGTH))
    if not _matches(_LABEL_VALUE_RE, value):
        errs.append(regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    # Go: name[:len(name)-2] + "a" — it drops two characters, not one, and we keep that quirk so the
    # same generateName values pass and fail. (Go would panic on a lone "-"; we treat it as "a".)
    if name.endswith("-"):
        return name[: max(len(name) - 2, 0)] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """NameIsDNSSubdomain: a prefix (generateName) may end in '-', the generator appends to it."""
    if prefix:
        name = _mask_trailing_dash(name)
    return is_dns1123_subdomain(name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    if prefix:
        name = _mask_trailing_dash(name)
    return is_dns1123_label(name)


# ValidateNamespaceName in apimachinery/pkg/api/validation/generic.go.
validate_namespace_name: NameFn = name_is_dns_label


# apimachinery/pkg/api/validation/path: names that are only used as one segment of a URL path.
_PATH_SEGMENT_NOT = (".", "..")
_PATH_SEGMENT_NOT_CONTAIN = ("/", "%")


def name_is_path_segment(name: str, prefix: bool) -> list[str]:
    """ValidatePathSegmentName: what k8s.io/apiserver's generic registry asks of every name (it must
    fit in a URL path); kinds that need DNS names (most built-in kinds, custom resources) ask more."""
    if not prefix and name in _PATH_SEGMENT_NOT:
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in _PATH_SEGMENT_NOT_CONTAIN if c in name]
