//! Registering tables from paths (Parquet file or directory, CSV file): placeholder.
