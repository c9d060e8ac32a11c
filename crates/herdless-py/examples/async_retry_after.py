"""An async call that honors the server's Retry-After (clamped by the
policy's max_retry_after and spread by the engine)."""

import asyncio
from typing import Optional, Union

import herdless


class HTTPError(Exception):
    def __init__(self, status: int, retry_after: Optional[str] = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def on(error: BaseException) -> Union[bool, herdless.Classification, None]:
    if isinstance(error, HTTPError):
        return herdless.http.classify_status(error.status, error.retry_after)
    return isinstance(error, (ConnectionError, asyncio.TimeoutError))


replies = [HTTPError(503, "1"), HTTPError(429, "2")]


@herdless.retry(on=on, policy=herdless.Policy(max_retry_after=5), budget=herdless.Budget.aws())
async def fetch(url: str) -> str:
    if replies:
        raise replies.pop(0)
    return f"200 from {url}"


async def main() -> None:
    print(await fetch("http://127.0.0.1:8080/scan"))


if __name__ == "__main__":
    asyncio.run(main())
