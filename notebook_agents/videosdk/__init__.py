"""VideoSDK agents sessions in the kernel, offline, in the same trace and views as LiveKit's.

Needs the extra: ``pip install 'notebook-agents[videosdk]'`` (videosdk-agents and its OpenAI
plugin).
"""

from ..errors import MissingExtraError

VIDEOSDK_EXTRA = "pip install 'notebook-agents[videosdk]'"

try:
    import videosdk.agents  # noqa: F401
except ImportError as missing:
    raise MissingExtraError(
        f"VideoSDK agents sessions need videosdk-agents and its OpenAI plugin: {VIDEOSDK_EXTRA}"
    ) from missing

from ._job_thread import Entrypoint  # noqa: E402
from .runner import VideoSDKRunner  # noqa: E402

__all__ = ["VIDEOSDK_EXTRA", "Entrypoint", "VideoSDKRunner"]
