"""Which gRPC failures of a call to etcd say "etcd may have applied it" (storage/etcd_client.py).

A write whose outcome is unknown must not be repeated blindly and surfaces as UnknownOutcome (504);
one etcd refused outright is its answer. The errors are gRPC's own AioRpcError values, as the
channel raises them.
"""

from __future__ import annotations

import grpc
import pytest
from grpc.aio import AioRpcError, Metadata

from storage.etcd_client import is_stream_reset, is_unreachable, never_reached_etcd


def rpc_error(code: grpc.StatusCode, details: str) -> AioRpcError:
    return AioRpcError(code, Metadata(), Metadata(), details=details)


@pytest.mark.parametrize(
    ("code", "details", "unreachable", "reset", "not_sent"),
    [
        (grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses", True, False, True),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", True, False, False),
        # The member died under the request: the stream is reset, the request may have been applied.
        (
            grpc.StatusCode.UNKNOWN,
            "Stream removed (RST_STREAM (Received RST_STREAM with error code 8))",
            True,
            True,
            False,
        ),
        (grpc.StatusCode.CANCELLED, "Received RST_STREAM with error code 8", True, True, False),
        # etcd's own answers.
        (grpc.StatusCode.UNKNOWN, "etcdserver: request is too large", False, False, False),
        (
            grpc.StatusCode.FAILED_PRECONDITION,
            "etcdserver: mvcc: required revision is a future revision",
            False,
            False,
            False,
        ),
        (grpc.StatusCode.CANCELLED, "Cancelled", False, False, False),
    ],
)
def test_classification(
    code: grpc.StatusCode, details: str, unreachable: bool, reset: bool, not_sent: bool
) -> None:
    err = rpc_error(code, details)
    assert (is_unreachable(err), is_stream_reset(err), never_reached_etcd(err)) == (
        unreachable,
        reset,
        not_sent,
    )
