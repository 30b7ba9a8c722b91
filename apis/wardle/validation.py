"""ValidateFlunder of sample-apiserver (pkg/apis/wardle/validation), on the hub, word for word.

The reference checks are one else-if chain in Go (at most one error), in this order.
"""

from __future__ import annotations

from typing import Any

from apis.meta.field import FieldError, invalid


def validate_flunder(flunder: Any) -> list[FieldError]:
    s = flunder.spec
    errs = [_references(s.flunder_reference or "", s.fischer_reference or "", s.reference_type or "")]
    if s.reference_type and s.reference_type not in ("Flunder", "Fischer"):
        errs.append(invalid("spec.referenceType", s.reference_type, "must be Flunder or Fischer"))
    return [e for e in errs if e is not None]


def _references(flunder: str, fischer: str, kind: str) -> FieldError | None:
    if flunder and fischer:
        return invalid(
            "spec.fischerReference", fischer, "cannot be set with flunderReference at the same time"
        )
    if flunder and kind != "Flunder":
        return invalid("spec.flunderReference", flunder, "cannot be set if referenceType is not Flunder")
    if fischer and kind != "Fischer":
        return invalid("spec.fischerReference", fischer, "cannot be set if referenceType is not Fischer")
    if not fischer and kind == "Fischer":
        return invalid("spec.fischerReference", fischer, "cannot be empty if referenceType is Fischer")
    if not flunder and kind == "Flunder":
        return invalid("spec.flunderReference", flunder, "cannot be empty if referenceType is Flunder")
    return None
