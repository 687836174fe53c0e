//! What `anon anonymize` prints of a bucketized release ((c,k)-anonymization or its
//! (p,k)-angelization baseline), published by the engine's anonymize job.

use datafusion_anonymity_engine::jobs::bucketize::BucketizationReport;

/// The release's summary on stdout, its warnings on stderr.
pub fn print_summary(report: &BucketizationReport) {
    let published = &report.publish;
    println!(
        "published {} records to {}: gt.parquet ({} generalized buckets) and st.parquet ({} \
         fingerprint buckets), verified",
        published.rows,
        published.output,
        published.generalized_buckets,
        published.fingerprint_buckets
    );
    let attack = &published.attack;
    println!(
        "fingerprint-correlation attack (linking '{}'): {} records partially, {} fully pinned",
        attack.linking_attribute, attack.partially_pinned, attack.fully_pinned
    );
    for other in &published.other_links {
        if other.partially_pinned > 0 {
            eprintln!(
                "warning: an adversary who knows a person's '{}' (instead of '{}') pins {} of \
                 {} records through the buckets it links ({}; {} fully); this method does not \
                 cut those links ('{}' is its linking attribute)",
                other.linking_attribute,
                attack.linking_attribute,
                other.partially_pinned,
                other.records,
                other.linked_attributes.join(", "),
                other.fully_pinned,
                attack.linking_attribute
            );
        }
    }
    println!("NCP: {:.2} %", published.ncp_percent);
}
