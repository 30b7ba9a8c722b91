"""Storage errors → API errors, as k8s.io/apiserver's pkg/registry/generic/registry/storage_errors does."""

from __future__ import annotations

from apis.meta import errors
from apis.meta.errors import GroupResource, StatusError
from storage import interface as st

UNKNOWN_OUTCOME = (
    "Timeout: request did not complete within requested timeout - context deadline exceeded; "
    "the write was sent to storage and its outcome is unknown (it may have been applied)"
)


def interpret(err: st.StorageError, gr: GroupResource, name: str) -> StatusError:
    if isinstance(err, st.NotFound):
        return errors.not_found(gr, name)
    if isinstance(err, st.AlreadyExists):
        return errors.already_exists(gr, name)
    if isinstance(err, st.Conflict):
        return errors.conflict(gr, name, errors.OBJECT_MODIFIED)
    if isinstance(err, st.TooOldResourceVersion):
        return errors.expired(str(err))
    if isinstance(err, st.FutureRevision):
        return errors.timeout(f"Too large resource version: {err.requested}, current: {err.current}", 1)
    if isinstance(err, st.UnknownOutcome):
        # kube's finisher at the request's deadline, plus what only storage knows: it was sent.
        return errors.timeout(f"{UNKNOWN_OUTCOME}: {err}")
    if isinstance(err, st.Unavailable):
        return errors.service_unavailable(f"storage is unavailable: {err}")
    return errors.internal_error(str(err))


UINT64_MAX = 2**64 - 1


def parse_resource_version(value: str | None) -> int:
    """ "" → 0; kube answers 400 for anything that is not an unsigned integer.

    strconv.ParseUint(value, 10, 64): ASCII digits only (Python's int() would also take " 1", "1_0" or
    non-ASCII digits) and nothing past uint64.
    """
    if not value:
        return 0
    # The length check first: int() refuses strings over 4300 digits with a ValueError.
    if not (value.isascii() and value.isdigit()) or len(value) > 20 or int(value) > UINT64_MAX:
        raise errors.bad_request(f"invalid resource version: {value!r}")
    return int(value)
