pub use datafusion;
