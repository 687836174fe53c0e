//! Policies: which columns are identifiers, quasi-identifiers (with their hierarchies),
//! sensitive or insensitive, and the privacy requirements a published table must meet.

pub mod requirements;

pub use requirements::{
    LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement, SuppressionMode,
    TCloseness, TClosenessKind,
};
