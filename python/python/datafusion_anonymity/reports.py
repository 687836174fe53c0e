"""The shapes of the JSON reports the jobs return, as ``TypedDict`` classes.

``anonymize``, ``apply``, ``profile``, ``build_hierarchy`` and ``check_hierarchy`` return
their report as a dict decoded from JSON; the classes here describe those dicts for a type
checker. Nothing here is checked at run time. The keys come from the Rust structs the engine
serializes (``crates/engine/src``: ``jobs/report.rs``, ``jobs/cloak.rs``, ``jobs/bucketize.rs``,
``publish/``, ``profile/``, ``jobs/hierarchy.rs``, ...), with their serde attributes: a key
``NotRequired`` is left out when empty (``skip_serializing_if``), a ``... | None`` key is always
there and ``None`` when it has no value.

What ``anonymize`` returns depends on the policy's ``[privacy] method``:
:class:`AnonymizeReport` for a generalization, :class:`CloakingReport`,
:class:`PerturbationReport` or :class:`BucketizationReport` otherwise (:data:`Report` is
their union; ``"command" in report`` tells a generalization's report apart, ``report["method"]``
the others). ``apply`` returns :class:`AnonymizeReport` or, for a perturbation policy,
:class:`PerturbationReport` (:data:`ApplyReport`).

JSON has no infinity or NaN: a float the engine could not write is ``null`` (the fields that
can be infinite by design are written ``"inf"`` and typed so). A JSON array decodes to a
``list``, also where Rust has a tuple (see :class:`AttackReport`).
"""

import sys
from typing import Literal, Union, final

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # Python 3.10 (datafusion requires typing_extensions there)
    from typing_extensions import NotRequired, TypedDict

__all__ = [
    "AnonymizeReport",
    "ApplyReport",
    "BucketizationReport",
    "CloakingReport",
    "FingerprintReport",
    "HierarchyBuildReport",
    "HierarchyCheckReport",
    "PerturbationReport",
    "ProfileReport",
    "Report",
]

#: +∞ as the reports write it (a class no population row covers, an enhanced β no bound meets).
Inf = Literal["inf"]

#: The search algorithms (``anonymize(algorithm=...)``).
Algorithm = Literal["optimal", "iab-full-domain", "mondrian", "kaca", "iab"]

#: What a full-domain search minimizes.
Metric = Literal["loss", "discernibility", "precision", "classes"]

#: The class-size ranges of ``class_sizes``, ``label_sizes`` and ``group_sizes``.
SizeRange = Literal["1", "2", "3-4", "5-9", "10+"]


# --- shared pieces ---------------------------------------------------------------------------


class SizeBucket(TypedDict):
    """Classes and rows of one class-size range."""

    size: SizeRange
    min: int
    max: int | None  # None for "10+"
    classes: int
    rows: int


class ColumnUniqueness(TypedDict):
    """A published column that is not a quasi-identifier, measured with the quasi-identifiers."""

    attribute: str
    unique_rows: int
    unique_share: float
    leakage_with_quasi_identifiers: float


class AttributeLeakage(TypedDict):
    """The normalized leakage of one published attribute."""

    attribute: str
    leakage: float


# --- the utility of a generalized release (profile's `utility`, anonymize's `utility`) -------


class QueryAccuracy(TypedDict):
    """The relative error of random COUNT(*) range queries."""

    queries: int
    seed: int
    mean_relative_error: float
    median_relative_error: float


class AttributeUtility(TypedDict):
    """Utility figures of one quasi-identifier."""

    attribute: str
    hierarchy: str | None
    loss: float
    modification_rate: float
    whd_uniform: float | None
    whd_beta1: float | None
    monotone_entropy_loss: float
    mutual_information_loss: float
    private_mutual_information_utility: float | None


class Moments(TypedDict):
    """An attribute's mean and sample variance, original and published."""

    attribute: str
    mean: float
    published_mean: float
    variance: float
    published_variance: float


class PerturbationUtility(TypedDict):
    """Utility of numeric perturbed attributes, each record against its original."""

    il: float
    il1s: float
    max_correlation_change: float
    moments: list[Moments]


class PerturbationRisk(TypedDict):
    """Disclosure risk of numeric perturbed attributes, each record against its original."""

    dbrl: float
    sdid: float
    sdid_percent: float


class PerturbedFigures(TypedDict):
    """The perturbation figures of a utility section whose quasi-identifiers are all numeric."""

    rows: int
    utility: PerturbationUtility
    risk: PerturbationRisk


class Utility(TypedDict):
    """Utility of an anonymized table against its original, matched row for row."""

    original: str
    matched_by: str
    suppressed_rows: int
    ncp: float
    loss_metric: float
    discernibility: float
    aecs: float | None
    classification_metric: float | None
    modification_rate: float
    whd_uniform: float | None
    whd_beta1: float | None
    monotone_entropy_loss: float
    mutual_information_loss: float
    private_mutual_information_utility: float | None
    query_accuracy: QueryAccuracy
    attributes: list[AttributeUtility]
    perturbation: NotRequired[PerturbedFigures]


# --- a generalized release: anonymize() and apply() ------------------------------------------


class QiLevel(TypedDict):
    """The level a quasi-identifier is generalized to."""

    quasi_identifier: str
    level: int
    meaning: str


class SensitiveAchieved(TypedDict):
    """The worst value of each bounded measure of one sensitive attribute (or the person column)."""

    attribute: str
    # one key per measure the policy bounds on this attribute (serde `flatten` of a map):
    # None when no class is kept, "inf" for +∞
    l: NotRequired[float | Inf | None]
    t: NotRequired[float | Inf | None]
    alpha: NotRequired[float | Inf | None]
    beta: NotRequired[float | Inf | None]
    delta: NotRequired[float | Inf | None]
    tuple_diversity: NotRequired[float | Inf | None]
    persons: NotRequired[float | Inf | None]  # k in persons, on the person column's entry


class DeltaPresenceRange(TypedDict):
    """The smallest and largest δ = |E| / F_E over the published classes."""

    min: float | Inf
    max: float | Inf


class PopulationAchieved(TypedDict):
    """k-map and δ-presence of a release against the policy's population."""

    population_rows: int
    k_map: int | None
    delta_presence: DeltaPresenceRange | None


class Verification(TypedDict):
    """What the written output achieves, measured on the written files."""

    rows: int
    classes: int
    k: int
    suppressed_rows: int
    sensitive: list[SensitiveAchieved]
    population: NotRequired[PopulationAchieved]
    failures: list[str]


class PostAnalytics(TypedDict):
    """What the written output gives away (risk, leakage), checked before it was published."""

    prosecutor_max: float
    prosecutor_average: float
    marketer: float
    journalist: NotRequired[float]
    population_marketer: NotRequired[float]
    leakage: list[AttributeLeakage]
    uniqueness: list[ColumnUniqueness]


class PublishTimings(TypedDict):
    """Seconds per phase of publishing."""

    classes: float
    write: float
    verify: float
    post_analytics: float
    commit: float


class PersonReport(TypedDict):
    """The person column of a release: what was published of it and its k."""

    column: str
    published: Literal["dropped", "pseudonym", "as is"]
    k_persons: int | None
    k_counts_persons: bool


class CountBias(TypedDict):
    """The relative bias the synthetic rows give count queries."""

    total: float
    max_class: float


class SyntheticClass(TypedDict):
    """One class that received synthetic records."""

    labels: list[str | None]
    real_rows: int
    added: int


class SyntheticReport(TypedDict):
    """What ``[synthetic]`` added (private: lists the classes)."""

    rows: int
    share: float
    classes_topped_up: int
    classes_left_below: int
    count_bias: CountBias
    quasi_identifiers: list[str]
    classes: list[SyntheticClass]


class PublishReport(TypedDict):
    """What publishing a generalized release did."""

    output: str
    delta_version: NotRequired[int]
    input_rows: int
    recoding: Literal["full-domain", "local"]
    levels: list[QiLevel]
    suppressed_rows: int
    row_order: Literal["shuffled", "input"]
    seed: int | None  # absent from written reports unless record_seed
    verification: Verification
    post_analytics: PostAnalytics
    class_sizes: list[SizeBucket]
    warnings: list[str]
    seconds: PublishTimings
    person: PersonReport | None
    synthetic: NotRequired[SyntheticReport]


class RiskThresholds(TypedDict):
    """The policy's post-analytics thresholds."""

    max_prosecutor_risk: float | None
    max_average_risk: float | None
    max_marketer_risk: float | None
    max_journalist_risk: float | None
    max_leakage: dict[str, float]
    max_unique_share: float | None


class RecodingFileFigures(TypedDict):
    """A local recoding file written (``recoding_out``) or applied (``recoding``)."""

    file: str
    classes: int
    uncovered_rows: int | None  # None when the file was written


class Timings(TypedDict):
    """Seconds per phase of a generalized release."""

    input: float
    frequency_set: float | None
    search: float | None
    suppression_count: float
    write: float
    verify: float
    post_analytics: float
    commit: float
    utility: float | None
    total: float


@final
class AnonymizeReport(TypedDict):
    """The report of a generalized release, from ``anonymize`` or ``apply``."""

    command: Literal["anonymize", "apply"]
    policy: str
    input: str
    input_version: NotRequired[int]
    algorithm: Algorithm | None  # None for apply
    refined: NotRequired[bool]  # mondrian only
    recoding: Literal["full-domain", "local"]
    metric: Metric | None
    metric_value: float | None
    levels: list[QiLevel]
    lattice_size: int | None
    nodes_checked: int | None
    local_classes: int | None
    frequency_set_rows: int | None
    recoding_file: NotRequired[RecodingFileFigures]
    publish: PublishReport
    warnings: list[str]  # the input's warnings, then the release's (publish.warnings)
    thresholds: RiskThresholds
    utility: Utility | None
    seconds: Timings


# --- a cloaked release: anonymize() with method = "cloaking" ---------------------------------


class LocationFigures(TypedDict):
    """The profile figures of a location release."""

    events: int
    published: int
    share_published: float
    labels: int
    median_cell_side_m: float | None
    p90_cell_side_m: float | None
    median_cell_area_m2: float | None
    median_window_s: float | None
    p90_window_s: float | None
    mean_anonymity: float | None
    min_anonymity: int | None


class UnicityFigures(TypedDict):
    """Unicity of traces for p = 1..5 points."""

    subjects_sampled: int
    unique: list[float]  # unique[p - 1]


class SuppressedArea(TypedDict):
    """A root cell (quadkey) and its suppressed events."""

    cell: str
    events: int


class ToleranceHint(TypedDict):
    """The events still suppressed with a tolerance doubled."""

    doubled: Literal["max_window", "max_cell_side", "both"]
    max_cell_side_m: float
    max_window_s: float
    suppressed: int


class SuppressedFigures(TypedDict):
    """Where and when the suppressed events were."""

    by_hour_utc: list[int]
    by_area: list[SuppressedArea]
    if_doubled: list[ToleranceHint]


class CloakVerification(TypedDict):
    """The figures verification measured on the written cloaked file."""

    labels: int
    min_subjects: int
    max_cell_side_m: float
    max_window_s: float


class CloakedPublish(TypedDict):
    """What was written and verified of a cloaked release."""

    output: str
    delta_version: NotRequired[int]
    rows: int
    verification: CloakVerification
    write_seconds: float
    verify_seconds: float
    uniqueness: list[ColumnUniqueness]
    warnings: list[str]


class CloakTimings(TypedDict):
    """Seconds per phase of a cloaked release."""

    read: float
    cloak: float
    write: float
    verify: float
    uniqueness: float
    measure: float
    total: float


@final
class CloakingReport(TypedDict):
    """The report of a cloaked release (``anonymize`` with ``method = "cloaking"``)."""

    policy: str
    input: str
    method: Literal["cloaking"]
    cells: Literal["quadtree", "adaptive"]
    k: int
    max_cell_side_m: float
    window_s: float
    max_window_s: float
    max_level: int
    seed: int  # absent from written reports unless record_seed
    subject: Literal["dropped", "pseudonym"]
    events: int
    subjects: int
    suppressed: int
    max_suppression: float
    figures: LocationFigures
    unicity_input: UnicityFigures
    unicity_release: UnicityFigures
    label_sizes: list[SizeBucket]
    suppressed_where: SuppressedFigures
    warnings: list[str]
    publish: CloakedPublish
    seconds: CloakTimings


# --- a perturbed release: anonymize() or apply() with method = "perturbation" ----------------


class PerturbedAttribute(TypedDict):
    """One perturbed attribute and its transformation."""

    attribute: str
    transformation: Literal[
        "microaggregation",
        "noise",
        "correlated_noise",
        "multiplicative_noise",
        "rank_swap",
        "pram",
        "permute",
    ]
    parameter: NotRequired[float]  # the level (noise), p (rank swapping) or retention (PRAM)


class MicroReport(TypedDict):
    """The figures of a release's microaggregation."""

    algorithm: Literal["mdav", "refined", "projection"]
    aggregate: Literal["mean", "median"]
    k: int
    groups: int
    smallest_group: int
    blocks: int
    information_loss: float


# functional syntax: `with` is a keyword
Association = TypedDict(
    "Association",
    {
        "with": str,
        "measure": Literal["cramers_v", "eta"],
        "before": float,
        "after": float,
    },
)
Association.__doc__ = "One association of a PRAMed attribute, before and after."


class PramReport(TypedDict):
    """What the report says of a PRAM attribute."""

    attribute: str
    invariant: bool
    categories: list[str]
    matrix: list[list[float]]
    published_counts: list[int]
    estimated_counts: list[float] | None  # None when the matrix is singular
    nulls_kept: int
    associations: list[Association]


class PerturbedVerification(TypedDict):
    """What verification measured on the written perturbed files."""

    rows: int
    classes: NotRequired[int]  # with microaggregation
    k: NotRequired[int]  # with microaggregation


class PerturbedSeconds(TypedDict):
    """Seconds per phase of a perturbed release."""

    read: float
    compute: float
    measure: float
    write: float
    verify: float
    commit: float


@final
class PerturbationReport(TypedDict):
    """The report of a perturbed release (``method = "perturbation"``)."""

    method: Literal["perturbation"]
    output: str
    delta_version: NotRequired[int]
    input_rows: int
    suppressed_rows: int
    row_order: Literal["shuffled"]
    seed: int  # absent from written reports unless record_seed
    attributes: list[PerturbedAttribute]
    strata: list[str]
    microaggregation: NotRequired[MicroReport]
    group_sizes: NotRequired[list[SizeBucket]]
    utility: NotRequired[PerturbationUtility]
    risk: NotRequired[PerturbationRisk]
    pram: NotRequired[list[PramReport]]
    verification: PerturbedVerification
    uniqueness: list[ColumnUniqueness]
    warnings: list[str]
    seconds: PerturbedSeconds


# --- a bucketized release: anonymize() with method = "ck-anonymization" / "pk-angelization" --


class Dependencies(TypedDict):
    """The dependency analysis of the sensitive attributes."""

    attributes: list[str]
    uncertainty: list[list[float]]  # uncertainty[i][j] = U(j | i)
    weights: list[int]
    linking: int  # an index into `attributes`
    linking_reason: Literal["weight", "external factor", "total dependency", "policy order"]
    categories: list[Literal["top_secret", "secret", "less_secret", "non_secret"]]
    determined: list[bool]
    determines: list[list[bool]]


class CkSummary(TypedDict):
    """What (c,k)-anonymization decided."""

    dependencies: Dependencies
    fingerprint_buckets: int
    generalized_buckets: int
    cohorts: int
    cohorts_merged: int


class AttackReport(TypedDict):
    """The fingerprint-correlation attack's figures."""

    linking_attribute: str
    linked_attributes: list[str]
    records: int
    partially_pinned: int
    fully_pinned: int
    # a Rust Vec<(String, u64)>: each item a two-element JSON array [attribute, records]
    pinned_per_attribute: list[list[str | int]]
    rounds: int


class FingerprintReport(AttackReport):
    """The report of ``attack_fingerprint`` (``anon attack fingerprint --json``)."""

    # attributes assumed determined by the linking one whose cells say otherwise (dropped)
    refuted: list[str]


class BucketVerification(TypedDict):
    """The figures verification measured on the written bucketized tables."""

    min_generalized_class: int
    min_bucket: int
    min_distinct_values: int
    max_linking_repeats: int


class BucketizedPublish(TypedDict):
    """What was written and verified of a bucketized release (Rust ``BucketizedReport``)."""

    method: Literal["ck-anonymization", "pk-angelization"]
    output: str
    rows: int
    published_quasi_identifiers: list[str]
    generalized_buckets: int
    fingerprint_buckets: int
    verification: BucketVerification
    attack: AttackReport
    other_links: list[AttackReport]
    ncp_percent: float
    write_seconds: float
    verify_seconds: float


class BucketizationTimings(TypedDict):
    """Seconds per phase of a bucketized release."""

    read: float
    bucketize: float
    write: float
    verify: float
    total: float


@final
class BucketizationReport(TypedDict):
    """The report of a bucketized release (``ck-anonymization`` or ``pk-angelization``)."""

    policy: str
    input: str
    method: Literal["ck-anonymization", "pk-angelization"]
    dependencies: Dependencies
    construction: CkSummary | None  # None for pk-angelization
    publish: BucketizedPublish
    seconds: BucketizationTimings


#: What ``anonymize`` returns, by the policy's method.
Report = Union[AnonymizeReport, CloakingReport, PerturbationReport, BucketizationReport]

#: What ``apply`` returns: a generalization at fixed levels, or a perturbation policy's release.
ApplyReport = Union[AnonymizeReport, PerturbationReport]


# --- profile() -------------------------------------------------------------------------------


class Homogeneity(TypedDict):
    """The classes (and their rows) exposed to the homogeneity attack."""

    classes: int
    rows: int


class BackgroundKnowledge(TypedDict):
    """The background-knowledge attack with ``ruled_out`` values ruled out."""

    ruled_out: int
    classes: int
    rows: int


class SensitiveFigures(TypedDict):
    """Diversity and closeness of one sensitive attribute: each the worst class's value."""

    attribute: str
    ordered: bool
    distinct_values: int
    l_distinct: int
    l_entropy: float
    l_recursive: int
    recursive_c: float
    t_equal: float
    t_ordered: float | None  # None unless ordered
    alpha: float
    beta: float
    beta_enhanced: float | None
    beta_enhanced_classes_over_cap: int
    delta: float
    delta_classes_missing_values: int
    tuple_diversity: float | None  # None unless ordered
    homogeneity: Homogeneity
    background_knowledge: list[BackgroundKnowledge]


class Anonymity(TypedDict):
    """Anonymity of the table: the worst class for every figure."""

    classes: int
    k: int
    k_persons: int | None
    sample_uniques: int
    class_sizes: list[SizeBucket]
    sensitive: list[SensitiveFigures]


class RiskThreshold(TypedDict):
    """Rows whose risk exceeds a threshold."""

    threshold: float
    rows: int
    share: float


class RiskBucket(TypedDict):
    """Rows with a risk in (``min``, ``max``]."""

    min: float
    max: float
    classes: int
    rows: int
    share: float


class PopulationRisk(TypedDict):
    """Risk against a population table."""

    population: str
    rows: int
    k_map: int
    journalist: float
    marketer: float
    classes_not_covered: int
    thresholds: list[RiskThreshold]


class Risk(TypedDict):
    """Re-identification risk of the profiled table."""

    prosecutor_max: float
    prosecutor_average: float
    marketer: float
    thresholds: list[RiskThreshold]
    distribution: list[RiskBucket]
    population: PopulationRisk | None


class Leakage(TypedDict):
    """The leakage of one attribute."""

    attribute: str
    quasi_identifier: bool
    distinct_values: int
    leakage: float


class LeakageRanking(TypedDict):
    """The attributes' leakage, highest first, and the quasi-identifiers' together."""

    attributes: list[Leakage]
    quasi_identifiers: float


class Relink(TypedDict):
    """Rows of two releases of the same data re-linkable by their position."""

    other: str
    other_rows: int
    columns: list[str]
    positions: int
    relinked: int
    share: float
    expected_by_chance: float


class RiskyClass(TypedDict):
    """A class among the riskiest, with its quasi-identifier values as text."""

    rows: int
    values: list[str | None]


class FingerprintAttack(AttackReport):
    """The fingerprint-correlation attack on a bucketized release's sensitive table."""

    # the AttackReport keys are flattened in (serde `flatten`)
    sensitive_table: str
    refuted: list[str]


class ProfileReport(TypedDict):
    """The report of ``profile``."""

    input: str
    rows: int
    quasi_identifiers: list[str]
    sensitive_attributes: list[str]
    person_id: str | None
    anonymity: Anonymity
    risk: Risk
    leakage: LeakageRanking
    utility: Utility | None  # None without `original`
    relink: Relink | None  # None without `relink`
    risky_classes: list[RiskyClass] | None  # None unless show_values
    fingerprint_attack: FingerprintAttack | None  # None without `fingerprint_st`


# --- build_hierarchy() and check_hierarchy() -------------------------------------------------


class LevelSummary(TypedDict):
    """One level of a hierarchy over a column."""

    level: int
    meaning: str
    classes: int
    smallest: int


class HierarchyBuildReport(TypedDict):
    """The report of ``build_hierarchy``."""

    file: str
    table: str
    column: str
    kind: Literal["interval", "quantile", "prefix", "date", "category"]
    leaves: int
    rows: int
    null_rows: int
    levels: list[LevelSummary]
    seconds: float


class HierarchyCheckReport(TypedDict):
    """The report of ``check_hierarchy``."""

    file: str
    table: str
    column: str
    leaves: int
    unused_leaves: int
    rows: int
    null_rows: int
    levels: list[LevelSummary]
    seconds: float
