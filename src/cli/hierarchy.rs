//! `anon hierarchy build` and `anon hierarchy check`: a thin shell over
//! [`datafusion_anonymity_engine::jobs::hierarchy`].

use clap::ValueEnum;
use datafusion::error::Result;
use datafusion_anonymity_engine::hierarchies::{BuilderOptions, BuilderSpec};
use datafusion_anonymity_engine::jobs::hierarchy::{
    BuildOptions, CheckOptions, build_hierarchy, check_hierarchy,
};

#[derive(clap::Args, Debug)]
pub(crate) struct HierarchyArgs {
    #[command(subcommand)]
    command: HierarchyCommand,
}

#[derive(clap::Subcommand, Debug)]
enum HierarchyCommand {
    /// Build a hierarchy file (ARX's CSV format, what `kind = "tree"` reads) from a column's
    /// values, and print its levels: classes and the smallest class's rows.
    Build(BuildArgs),
    /// Check a hierarchy file by every rule a policy applies (each error names the file, the
    /// line and the rule), against the values of a column, and print its levels.
    Check(CheckArgs),
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Kind {
    /// Fixed-width intervals of a numeric column (`--widths`, `--origin`).
    Interval,
    /// Intervals of a numeric column holding at least `--min-size` rows each, per level.
    Quantile,
    /// Prefixes of codes (ZIP, ICD-10): the first `--keep` characters, the rest masked.
    Prefix,
    /// Calendar units of a date or timestamp column (`--units`).
    Date,
    /// Categories: rare values merged first until each group holds `--min-size` rows.
    Category,
}

#[derive(clap::Args, Debug)]
struct BuildArgs {
    /// The table: a Parquet or CSV file (with a header row), a directory of them, or a URL.
    #[arg(long, value_name = "PATH")]
    table: String,
    /// The column the hierarchy is for.
    #[arg(long, value_name = "NAME")]
    column: String,
    /// The hierarchy file to write.
    #[arg(long, value_name = "FILE")]
    out: String,
    /// The builder.
    #[arg(long, value_enum)]
    kind: Kind,
    /// `interval`: the width of each level, each a multiple of the previous (e.g. 5,10,20).
    #[arg(long, value_delimiter = ',', value_name = "W,...")]
    widths: Vec<f64>,
    /// `interval`: where the intervals start (default 0).
    #[arg(long, value_name = "X")]
    origin: Option<f64>,
    /// `quantile` and `category`: the rows each class holds at least, per level, increasing
    /// (e.g. 100,1000,10000).
    #[arg(long = "min-size", value_delimiter = ',', value_name = "N,...")]
    min_size: Vec<u64>,
    /// `prefix`: the characters kept at each level, decreasing (e.g. 3,1; default: every
    /// length below the longest value's).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    keep: Vec<usize>,
    /// `date`: the calendar units, finest first (day, week, month, quarter, year, decade).
    #[arg(long, value_delimiter = ',', value_name = "UNIT,...")]
    units: Vec<String>,
    /// Replace the file when it exists.
    #[arg(long)]
    overwrite: bool,
    /// Memory limit of the process (e.g. 2GiB).
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// The hierarchy file (ARX's CSV format).
    #[arg(value_name = "FILE")]
    file: String,
    /// The column it is for.
    #[arg(long, value_name = "NAME")]
    column: String,
    /// The table: a Parquet or CSV file (with a header row), a directory of them, or a URL.
    #[arg(long, value_name = "PATH")]
    table: String,
    /// Memory limit of the process (e.g. 2GiB).
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
}

impl BuildArgs {
    /// The builder the flags ask for (a flag of another kind is an error).
    fn spec(&self) -> Result<BuilderSpec> {
        fn given<T: Clone>(v: &[T]) -> Option<Vec<T>> {
            (!v.is_empty()).then(|| v.to_vec())
        }
        BuilderSpec::from_options(BuilderOptions {
            kind: self
                .kind
                .to_possible_value()
                .map_or_else(String::new, |v| v.get_name().to_string()),
            widths: given(&self.widths),
            origin: self.origin,
            min_size: given(&self.min_size),
            keep: given(&self.keep),
            units: given(&self.units),
        })
    }
}

pub(crate) async fn run(args: HierarchyArgs) -> Result<()> {
    match args.command {
        HierarchyCommand::Build(args) => {
            let spec = args.spec()?;
            let ctx = datafusion_anonymity_engine::session::context_with_limit(
                args.memory_limit.as_deref(),
            )?;
            let report = build_hierarchy(
                &ctx,
                BuildOptions {
                    table: args.table,
                    column: args.column,
                    out: args.out,
                    spec,
                    overwrite: args.overwrite,
                },
            )
            .await?;
            print!("{}", report.summary());
        }
        HierarchyCommand::Check(args) => {
            let ctx = datafusion_anonymity_engine::session::context_with_limit(
                args.memory_limit.as_deref(),
            )?;
            let report = check_hierarchy(
                &ctx,
                CheckOptions {
                    file: args.file,
                    column: args.column,
                    table: args.table,
                },
            )
            .await?;
            print!("{}", report.summary());
        }
    }
    Ok(())
}
