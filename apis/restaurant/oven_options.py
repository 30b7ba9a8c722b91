"""PizzaOvenOptions: the query parameters of GET pizzas/{name}/oven, decoded and validated as kube does
PodLogOptions for pods/log (same names, same meanings, same errors).

A value that does not decode is a 400 BadRequest with Go's conversion error, as the parameter codec
answers; one that decodes but is out of range is a 422 Invalid on PizzaOvenOptions, with the messages
of kube's ValidatePodLogOptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apis.meta import errors
from apis.meta.errors import GroupKind
from apis.meta.field import FieldError, forbidden, invalid
from apis.restaurant.types import GROUP_NAME

OVEN_OPTIONS_KIND = "PizzaOvenOptions"
RFC3339 = "2006-01-02T15:04:05Z07:00"

# (name, type, description) of each option, as OpenAPI lists them.
OVEN_OPTION_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("follow", "boolean", "Follow the baking log of the pizza until it is gone. Defaults to false."),
    (
        "sinceSeconds",
        "integer",
        "A relative time in seconds before the current time from which to show the log. Only one of "
        "sinceSeconds or sinceTime may be specified.",
    ),
    (
        "sinceTime",
        "string",
        "An RFC3339 timestamp from which to show the log. Only one of sinceSeconds or sinceTime may be "
        "specified.",
    ),
    (
        "tailLines",
        "integer",
        "If set, the number of lines from the end of the log to show. If not specified, the log is shown "
        "from the pizza's creation.",
    ),
    (
        "timestamps",
        "boolean",
        "If true, add an RFC3339 timestamp at the beginning of every line of the log. Defaults to false.",
    ),
)


@dataclass(frozen=True, slots=True)
class OvenOptions:
    follow: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: datetime | None = None
    timestamps: bool = False

    def since(self, now: datetime) -> datetime | None:
        """The earliest time a line may have to be shown, if the options limit it."""
        if self.since_seconds is not None:
            return now - timedelta(seconds=self.since_seconds)
        return self.since_time


def _bool(query: Mapping[str, str], name: str) -> bool:
    # runtime.Convert_Slice_string_To_bool: only "0" and "false" (any case) are false.
    value = query.get(name)
    return value is not None and value != "" and value != "0" and value.lower() != "false"


def _int(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value is None:
        return None
    text = value.removeprefix("+").removeprefix("-")
    if not text.isascii() or not text.isdigit():
        raise errors.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return number


def _time(query: Mapping[str, str], name: str) -> datetime | None:
    value = query.get(name)
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or "T" not in value.upper():
        raise errors.bad_request(f'parsing time "{value}" as "{RFC3339}": cannot parse "{value}" as RFC 3339')
    return parsed.astimezone(UTC)


def parse_oven_options(query: Mapping[str, str], name: str) -> OvenOptions:
    """The options of one request, or the 400/422 kube gives for pods/log's equivalent."""
    options = OvenOptions(
        follow=_bool(query, "follow"),
        tail_lines=_int(query, "tailLines"),
        since_seconds=_int(query, "sinceSeconds"),
        since_time=_time(query, "sinceTime"),
        timestamps=_bool(query, "timestamps"),
    )
    problems: list[FieldError] = []
    if options.tail_lines is not None and options.tail_lines < 0:
        problems.append(invalid("tailLines", options.tail_lines, "must be greater than or equal to 0"))
    if options.since_seconds is not None and options.since_time is not None:
        problems.append(forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif options.since_seconds is not None and options.since_seconds < 1:
        problems.append(invalid("sinceSeconds", options.since_seconds, "must be greater than 0"))
    if problems:
        raise errors.invalid(GroupKind(GROUP_NAME, OVEN_OPTIONS_KIND), name, problems)
    return options
