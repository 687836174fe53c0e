//! Benchmark command (`anon bench`): placeholder, filled in by the benchmark work.
