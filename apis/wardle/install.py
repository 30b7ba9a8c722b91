"""The wardle.example.com group of k8s.io/sample-apiserver, declared once per kind.

v1beta1 is preferred; objects are stored in v1alpha1, as sample-apiserver's storage codec
(`LegacyCodec(v1alpha1)`) writes them. Fischer is served in v1alpha1 only.
"""

from __future__ import annotations

from apis.runtime.declare import Version, declare_kind
from apis.runtime.kinds import GroupInfo, SchemeTypes
from apis.wardle import v1alpha1, v1beta1

GROUP_NAME = "wardle.example.com"
STORAGE_VERSION = v1alpha1.VERSION

FLUNDER_KIND, Flunder = declare_kind(
    "Flunder",
    hub_version=v1beta1.VERSION,
    versions={
        v1beta1.VERSION: Version(v1beta1.FLUNDER),
        v1alpha1.VERSION: Version(
            v1alpha1.FLUNDER, v1alpha1.flunder_up, v1alpha1.flunder_down, v1alpha1.LIFECYCLE
        ),
    },
    storage_version=STORAGE_VERSION,
    namespaced=True,
    module=__name__,
)
FISCHER_KIND, Fischer = declare_kind(
    "Fischer",
    hub_version=v1alpha1.VERSION,
    versions={v1alpha1.VERSION: Version(v1alpha1.FISCHER, lifecycle=v1alpha1.LIFECYCLE)},
    storage_version=STORAGE_VERSION,
    namespaced=False,
    module=__name__,
)
# sample-apiserver's kinds are Go types of its scheme, the internal ones in package wardle: decoding
# and field selector errors read as k8s.io/apiserver's typed handlers word them.
SCHEME_TYPES = SchemeTypes(internal_package="wardle")
# The versions are modules here, so their protobuf messages are under apis/wardle/proto/<version>/.
KINDS = (FLUNDER_KIND, FISCHER_KIND)
GROUP = GroupInfo(
    GROUP_NAME, (v1beta1.VERSION, v1alpha1.VERSION), KINDS, SCHEME_TYPES, protobuf="apis.wardle.proto"
)
