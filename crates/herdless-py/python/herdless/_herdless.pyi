"""Stubs of the extension module (the engine's objects)."""

import datetime
from os import PathLike
from typing import Any, Callable, Dict, FrozenSet, Iterator, Mapping, Optional, Tuple, Union

Seconds = Union[int, float, datetime.timedelta, str]

__version__: str

class Policy:
    def __init__(
        self,
        *,
        base: Optional[Seconds] = None,
        cap: Optional[Seconds] = None,
        multiplier: Optional[float] = None,
        max_attempts: Optional[int] = None,
        max_elapsed: Optional[Seconds] = None,
        max_retry_after: Optional[Seconds] = None,
        jitter: Optional[str] = None,
        retry_after_spread: Optional[float] = None,
    ) -> None: ...
    @staticmethod
    def from_file(path: Union[str, "PathLike[str]"], name: str) -> "Policy": ...
    @property
    def base(self) -> float: ...
    @property
    def cap(self) -> float: ...
    @property
    def multiplier(self) -> float: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def max_elapsed(self) -> float: ...
    @property
    def max_retry_after(self) -> float: ...
    @property
    def retry_after_spread(self) -> float: ...
    @property
    def jitter(self) -> str: ...
    @property
    def attempt_timeout(self) -> Optional[float]: ...
    def ceiling(self, n: int) -> float: ...

class Budget:
    def __init__(
        self,
        *,
        max_tokens: Optional[float] = None,
        initial_tokens: Optional[float] = None,
        failure_cost: Optional[float] = None,
        retry_cost: Optional[float] = None,
        timeout_cost: Optional[float] = None,
        success_refund: Optional[float] = None,
        refund_retry_cost: Optional[bool] = None,
        threshold: Optional[float] = None,
        spread: Optional[float] = None,
    ) -> None: ...
    @staticmethod
    def grpc(max_tokens: float, token_ratio: float) -> "Budget": ...
    @staticmethod
    def aws() -> "Budget": ...
    @property
    def tokens(self) -> float: ...
    @property
    def max_tokens(self) -> float: ...

class Breaker:
    def __init__(
        self,
        *,
        threshold: Optional[int] = None,
        probe_wait: Optional[Seconds] = None,
        release_window: Optional[Seconds] = None,
    ) -> None: ...
    @property
    def is_open(self) -> bool: ...
    @property
    def consecutive_failures(self) -> int: ...

class Throttle:
    def __init__(
        self,
        *,
        initial: Optional[int] = None,
        window: Optional[Seconds] = None,
        probe_min: Optional[Seconds] = None,
        probe_max: Optional[Seconds] = None,
        threshold: Optional[int] = None,
        max_wait: Optional[Seconds] = None,
    ) -> None: ...
    @property
    def rate(self) -> float: ...
    @property
    def is_probing(self) -> bool: ...

class Classification:
    @staticmethod
    def retryable() -> "Classification": ...
    @staticmethod
    def terminal() -> "Classification": ...
    @staticmethod
    def retry_after(seconds: float) -> "Classification": ...
    @property
    def name(self) -> str: ...
    @property
    def is_retryable(self) -> bool: ...
    @property
    def server_delay(self) -> Optional[float]: ...

class Attempt:
    @property
    def number(self) -> int: ...
    def __enter__(self) -> "Attempt": ...
    def __exit__(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> bool: ...

class _Attempts(Iterator[Attempt]):
    def __iter__(self) -> "_Attempts": ...
    def __next__(self) -> Attempt: ...
    def advance(self) -> Union[float, Attempt, None]: ...
    def exit(self, error: Optional[BaseException]) -> bool: ...
    def cancel(self) -> None: ...
    @property
    def attempts(self) -> int: ...

class _Retrier:
    def __init__(
        self,
        *,
        on: Any,
        policy: Optional[Policy] = None,
        budget: Optional[Budget] = None,
        breaker: Optional[Breaker] = None,
        throttle: Optional[Throttle] = None,
        task_id: Any = None,
        hook: Optional[Callable[[str, Dict[str, Any]], Any]] = None,
    ) -> None: ...
    def bind(self, f: Callable[..., Any]) -> "_Retrier": ...
    def call(
        self, f: Callable[..., Any], args: Tuple[Any, ...], kwargs: Optional[Mapping[str, Any]] = None
    ) -> Any: ...
    def attempts(
        self, args: Optional[Tuple[Any, ...]] = None, kwargs: Optional[Mapping[str, Any]] = None
    ) -> _Attempts: ...

def set_testing(flag: bool, *, attempts: Optional[int] = None) -> None: ...
def is_testing() -> bool: ...
def simulate(**flags: Any) -> Dict[str, Any]: ...
def classify_status(
    status: int,
    retry_after: Union[str, bytes, None] = None,
    *,
    retry_after_ms: Union[str, bytes, None] = None,
) -> Optional[Classification]: ...
def parse_retry_after(value: Union[str, bytes]) -> Optional[float]: ...
def parse_retry_after_ms(value: Union[str, bytes]) -> Optional[float]: ...

RETRYABLE_STATUSES: FrozenSet[int]
TERMINAL_STATUSES: FrozenSet[int]
