//! Nothing: the checks are the integration tests under `tests/`.
