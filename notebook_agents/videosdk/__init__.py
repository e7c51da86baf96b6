"""VideoSDK agents sessions in the kernel, offline, in the same trace and views as LiveKit's.

Needs the extra: ``pip install 'notebook-agents[videosdk]'``.
"""

from .runner import Entrypoint, VideoSDKRunner

__all__ = ["Entrypoint", "VideoSDKRunner"]
