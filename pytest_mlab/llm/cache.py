"""``--llm-cache=DIR``: answers of real models kept on disk, so reruns are free and deterministic.

One JSON file per distinct (model, prompt, stop, temperature, max_tokens, and the server where
an agent spec names one: ``api_base``). Files are written to a
temporary name and renamed into place, so xdist workers sharing the folder never see half a file;
two workers asking the same question at once both call the model and the last rename wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pytest_mlab.llm.base import Completion
from pytest_mlab.llm.provider import Request


class ResponseCache:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @staticmethod
    def key(request: Request) -> str:
        identity = [request.model, request.prompt, list(request.stop), request.temperature, request.max_tokens]
        if request.api_base is not None:  # another server may serve another model under the same name
            identity.append(request.api_base)
        return hashlib.sha256(json.dumps(identity, ensure_ascii=False).encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, request: Request) -> Completion | None:
        """The stored reply, or None (also for an unreadable entry, which is then simply replaced)."""
        try:
            data: dict[str, Any] = json.loads(self._path(self.key(request)).read_text(encoding="utf-8"))
            return Completion(str(data["text"]), request.model, request.role, int(data["prompt_tokens"]),
                              int(data["completion_tokens"]), cached=True, provider_model=str(data.get("model") or ""))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, request: Request, reply: Completion) -> None:
        path = self._path(self.key(request))
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"model": reply.provider_model or reply.model, "prompt": request.prompt, "stop": list(request.stop),
                  "temperature": request.temperature, "max_tokens": request.max_tokens, "text": reply.text,
                  "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(record, stream, ensure_ascii=False)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
