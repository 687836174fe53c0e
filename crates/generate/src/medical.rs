//! The synthetic medical table: one row per patient, the quasi-identifiers of the patients
//! table (age, sex, zip) and several correlated sensitive attributes, for experiments with
//! multiple sensitive attributes ((c,k)-anonymization and the like).
//!
//! The sensitive attributes hang together as in hospital data: every patient sees one of about
//! 2,000 physicians (workloads skewed, weights 1/rank^0.8); each physician has exactly one
//! specialty (physician → specialty is a functional dependency); the diagnosis comes from the
//! specialty's own list (a strong dependency, not a functional one), and the symptom, the
//! diagnostic method and the treatment from the diagnosis's lists. Every list in [`SPECIALTIES`]
//! is ordered from most to least frequent and drawn with weights 1/rank.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::Result;

use super::{
    BatchSource, Categorical, age_decades, cumulative, draw_age, draw_index, label_column, sexes,
    write_table, zip_codes,
};
use datafusion_anonymity::rng::SplitMix64;

/// Physicians, named `dr-0001` to `dr-2000`.
const PHYSICIANS: usize = 2_000;
/// A physician's workload is 1/rank^this (ranks shuffled over the names): the busiest sees
/// about 2000^0.8 ≈ 440 times the patients of the least busy.
const WORKLOAD_EXPONENT: f64 = 0.8;
/// The share of rows whose symptom is a generic one rather than one of the diagnosis's own.
const GENERIC_SYMPTOM_SHARE: f64 = 0.1;
/// Symptoms of any diagnosis; none is on a diagnosis's own list.
const GENERIC_SYMPTOMS: &[&str] = &[
    "fatigue",
    "pain",
    "fever",
    "nausea",
    "headache",
    "dizziness",
    "weakness",
    "loss of appetite",
];

/// A specialty: its share of the physicians and its diagnoses, most frequent first.
pub(super) struct Specialty {
    pub(super) name: &'static str,
    pub(super) share: f64,
    pub(super) diagnoses: &'static [Diagnosis],
}

/// A diagnosis and its symptoms, diagnostic methods and treatments, most frequent first.
pub(super) struct Diagnosis {
    pub(super) name: &'static str,
    symptoms: &'static [&'static str],
    methods: &'static [&'static str],
    treatments: &'static [&'static str],
}

const fn dx(
    name: &'static str,
    symptoms: &'static [&'static str],
    methods: &'static [&'static str],
    treatments: &'static [&'static str],
) -> Diagnosis {
    Diagnosis {
        name,
        symptoms,
        methods,
        treatments,
    }
}

/// The specialties (shares of the physicians summing to 1) and their diagnoses. Diagnosis names
/// are distinct across specialties.
#[rustfmt::skip]
pub(super) const SPECIALTIES: &[Specialty] = &[
    Specialty { name: "cardiology", share: 0.16, diagnoses: &[
        dx("coronary artery disease",
           &["chest pain", "shortness of breath", "palpitations", "cold sweats"],
           &["ECG", "stress test", "coronary angiography"],
           &["statins", "angioplasty", "bypass surgery"]),
        dx("hypertension",
           &["no symptoms", "morning headache", "blurred vision", "nosebleeds"],
           &["blood pressure monitoring", "blood test"],
           &["ACE inhibitors", "diuretics", "calcium channel blockers"]),
        dx("heart failure",
           &["shortness of breath", "leg swelling", "exercise intolerance", "orthopnea"],
           &["echocardiogram", "BNP test", "chest X-ray"],
           &["ACE inhibitors", "beta blockers", "diuretics"]),
        dx("atrial fibrillation",
           &["palpitations", "irregular heartbeat", "shortness of breath"],
           &["ECG", "Holter monitor"],
           &["anticoagulants", "beta blockers", "cardioversion", "catheter ablation"]),
        dx("myocardial infarction",
           &["chest pain", "cold sweats", "arm pain", "shortness of breath"],
           &["ECG", "troponin test", "coronary angiography"],
           &["angioplasty", "thrombolysis", "antiplatelets"]),
        dx("valvular heart disease",
           &["heart murmur", "shortness of breath", "chest pain"],
           &["echocardiogram", "cardiac MRI"],
           &["valve replacement", "valve repair", "diuretics"]),
    ] },
    Specialty { name: "oncology", share: 0.12, diagnoses: &[
        dx("breast cancer",
           &["breast lump", "nipple discharge", "skin dimpling"],
           &["mammography", "biopsy", "MRI"],
           &["surgery", "chemotherapy", "radiotherapy", "hormone therapy"]),
        dx("lung cancer",
           &["persistent cough", "coughing blood", "chest pain", "weight loss"],
           &["CT scan", "biopsy", "bronchoscopy"],
           &["surgery", "chemotherapy", "radiotherapy", "immunotherapy"]),
        dx("colorectal cancer",
           &["rectal bleeding", "change in bowel habits", "abdominal pain", "weight loss"],
           &["colonoscopy", "biopsy", "CT scan"],
           &["surgery", "chemotherapy", "radiotherapy"]),
        dx("prostate cancer",
           &["frequent urination", "weak urine flow", "pelvic pain"],
           &["PSA test", "biopsy", "MRI"],
           &["surgery", "radiotherapy", "hormone therapy"]),
        dx("leukemia",
           &["easy bruising", "recurrent infections", "night sweats", "weight loss"],
           &["blood test", "bone marrow biopsy"],
           &["chemotherapy", "stem cell transplant", "targeted therapy"]),
        dx("lymphoma",
           &["swollen lymph nodes", "night sweats", "weight loss", "itching"],
           &["biopsy", "PET scan", "CT scan"],
           &["chemotherapy", "radiotherapy", "immunotherapy"]),
        dx("stomach cancer",
           &["indigestion", "abdominal pain", "weight loss", "difficulty swallowing"],
           &["endoscopy", "biopsy", "CT scan"],
           &["surgery", "chemotherapy"]),
    ] },
    Specialty { name: "orthopedics", share: 0.10, diagnoses: &[
        dx("fracture",
           &["swelling", "deformity", "inability to bear weight", "bruising"],
           &["X-ray", "CT scan"],
           &["cast", "surgical fixation", "traction"]),
        dx("osteoarthritis",
           &["joint pain", "stiffness", "reduced range of motion"],
           &["X-ray", "MRI"],
           &["analgesics", "physiotherapy", "joint replacement"]),
        dx("herniated disc",
           &["back pain", "leg pain", "numbness"],
           &["MRI", "CT scan"],
           &["physiotherapy", "epidural injection", "discectomy"]),
        dx("ACL tear",
           &["knee instability", "knee swelling", "popping sound"],
           &["MRI", "physical examination"],
           &["physiotherapy", "ACL reconstruction"]),
        dx("carpal tunnel syndrome",
           &["hand numbness", "tingling fingers", "weak grip"],
           &["nerve conduction study", "electromyography"],
           &["wrist splint", "corticosteroid injection", "carpal tunnel release"]),
        dx("rotator cuff tear",
           &["shoulder pain", "arm weakness", "limited shoulder motion"],
           &["MRI", "ultrasound"],
           &["physiotherapy", "corticosteroid injection", "rotator cuff repair"]),
        dx("scoliosis",
           &["uneven shoulders", "back pain", "visible spinal curve"],
           &["X-ray", "MRI"],
           &["observation", "back brace", "spinal fusion"]),
    ] },
    Specialty { name: "neurology", share: 0.09, diagnoses: &[
        dx("migraine",
           &["throbbing headache", "light sensitivity", "visual aura", "vomiting"],
           &["neurological examination", "MRI"],
           &["triptans", "analgesics", "beta blockers"]),
        dx("stroke",
           &["facial drooping", "arm weakness", "slurred speech", "confusion"],
           &["CT scan", "MRI", "carotid ultrasound"],
           &["thrombolysis", "thrombectomy", "antiplatelets", "rehabilitation"]),
        dx("epilepsy",
           &["seizures", "loss of consciousness", "confusion"],
           &["EEG", "MRI"],
           &["antiepileptics", "vagus nerve stimulation", "epilepsy surgery"]),
        dx("Parkinson's disease",
           &["tremor", "rigidity", "slow movement", "balance problems"],
           &["neurological examination", "DaT scan"],
           &["levodopa", "dopamine agonists", "deep brain stimulation"]),
        dx("multiple sclerosis",
           &["numbness", "vision problems", "muscle spasms", "balance problems"],
           &["MRI", "lumbar puncture", "evoked potentials"],
           &["disease-modifying therapy", "corticosteroids", "physiotherapy"]),
        dx("Alzheimer's disease",
           &["memory loss", "confusion", "mood changes"],
           &["cognitive assessment", "MRI", "PET scan"],
           &["cholinesterase inhibitors", "memantine", "cognitive therapy"]),
    ] },
    Specialty { name: "psychiatry", share: 0.08, diagnoses: &[
        dx("major depressive disorder",
           &["low mood", "loss of interest", "sleep problems", "feelings of worthlessness"],
           &["psychiatric evaluation", "PHQ-9 questionnaire"],
           &["antidepressants", "psychotherapy", "electroconvulsive therapy"]),
        dx("generalized anxiety disorder",
           &["excessive worry", "restlessness", "sleep problems", "palpitations"],
           &["psychiatric evaluation", "GAD-7 questionnaire"],
           &["SSRIs", "cognitive behavioral therapy", "benzodiazepines"]),
        dx("bipolar disorder",
           &["mood swings", "elevated mood", "impulsivity", "low mood"],
           &["psychiatric evaluation", "mood chart"],
           &["mood stabilizers", "antipsychotics", "psychotherapy"]),
        dx("schizophrenia",
           &["hallucinations", "delusions", "disorganized speech", "social withdrawal"],
           &["psychiatric evaluation", "MRI"],
           &["antipsychotics", "psychosocial therapy"]),
        dx("post-traumatic stress disorder",
           &["flashbacks", "nightmares", "hypervigilance"],
           &["psychiatric evaluation", "PCL-5 questionnaire"],
           &["trauma-focused therapy", "SSRIs"]),
    ] },
    Specialty { name: "pulmonology", share: 0.08, diagnoses: &[
        dx("asthma",
           &["wheezing", "shortness of breath", "chest tightness", "cough"],
           &["spirometry", "peak flow test"],
           &["inhaled corticosteroids", "bronchodilators"]),
        dx("COPD",
           &["shortness of breath", "chronic cough", "sputum production", "wheezing"],
           &["spirometry", "chest X-ray", "CT scan"],
           &["bronchodilators", "inhaled corticosteroids", "pulmonary rehabilitation",
             "oxygen therapy"]),
        dx("pneumonia",
           &["cough", "chills", "chest pain", "shortness of breath"],
           &["chest X-ray", "blood test", "sputum culture"],
           &["antibiotics", "oxygen therapy"]),
        dx("sleep apnea",
           &["snoring", "daytime sleepiness", "morning headache"],
           &["polysomnography", "overnight oximetry"],
           &["CPAP", "oral appliance", "weight management"]),
        dx("pulmonary embolism",
           &["sudden shortness of breath", "chest pain", "coughing blood"],
           &["CT pulmonary angiography", "D-dimer test"],
           &["anticoagulants", "thrombolysis"]),
        dx("pulmonary fibrosis",
           &["dry cough", "shortness of breath", "clubbed fingers"],
           &["CT scan", "lung biopsy", "spirometry"],
           &["antifibrotics", "oxygen therapy", "lung transplant"]),
    ] },
    Specialty { name: "gastroenterology", share: 0.08, diagnoses: &[
        dx("gastroesophageal reflux disease",
           &["heartburn", "regurgitation", "chest pain", "chronic cough"],
           &["endoscopy", "pH monitoring"],
           &["proton pump inhibitors", "antacids", "lifestyle changes"]),
        dx("irritable bowel syndrome",
           &["abdominal pain", "bloating", "diarrhea", "constipation"],
           &["blood test", "colonoscopy"],
           &["dietary changes", "antispasmodics", "laxatives"]),
        dx("peptic ulcer",
           &["abdominal pain", "indigestion", "black stools", "vomiting"],
           &["endoscopy", "H. pylori test"],
           &["proton pump inhibitors", "antibiotics"]),
        dx("Crohn's disease",
           &["abdominal pain", "diarrhea", "weight loss", "rectal bleeding"],
           &["colonoscopy", "MRI", "biopsy"],
           &["corticosteroids", "immunosuppressants", "biologics", "surgery"]),
        dx("ulcerative colitis",
           &["bloody diarrhea", "abdominal pain", "bowel urgency"],
           &["colonoscopy", "biopsy"],
           &["aminosalicylates", "corticosteroids", "biologics"]),
        dx("cirrhosis",
           &["jaundice", "abdominal swelling", "itching", "easy bruising"],
           &["liver function test", "ultrasound", "liver biopsy"],
           &["diuretics", "beta blockers", "liver transplant"]),
        dx("gallstones",
           &["upper abdominal pain", "back pain", "vomiting"],
           &["ultrasound", "blood test"],
           &["cholecystectomy", "analgesics", "ursodeoxycholic acid"]),
    ] },
    Specialty { name: "endocrinology", share: 0.07, diagnoses: &[
        dx("type 2 diabetes",
           &["excessive thirst", "frequent urination", "blurred vision", "slow healing"],
           &["HbA1c test", "fasting glucose test"],
           &["metformin", "insulin", "SGLT2 inhibitors", "lifestyle changes"]),
        dx("hypothyroidism",
           &["weight gain", "cold intolerance", "dry skin", "constipation"],
           &["TSH test", "thyroid ultrasound"],
           &["levothyroxine", "liothyronine"]),
        dx("hyperthyroidism",
           &["weight loss", "heat intolerance", "palpitations", "tremor"],
           &["TSH test", "thyroid scan"],
           &["antithyroid drugs", "radioactive iodine", "thyroidectomy"]),
        dx("type 1 diabetes",
           &["excessive thirst", "frequent urination", "weight loss"],
           &["HbA1c test", "autoantibody test"],
           &["insulin injections", "insulin pump"]),
        dx("osteoporosis",
           &["back pain", "loss of height", "fragility fractures"],
           &["DEXA scan", "X-ray"],
           &["bisphosphonates", "calcium and vitamin D", "denosumab"]),
        dx("Cushing's syndrome",
           &["weight gain", "round face", "thin skin", "high blood pressure"],
           &["cortisol test", "dexamethasone suppression test", "MRI"],
           &["surgery", "radiotherapy", "cortisol inhibitors"]),
    ] },
    Specialty { name: "infectious disease", share: 0.06, diagnoses: &[
        dx("influenza",
           &["cough", "sore throat", "muscle aches", "chills"],
           &["rapid influenza test", "PCR test"],
           &["antivirals", "rest and fluids"]),
        dx("urinary tract infection",
           &["burning urination", "frequent urination", "cloudy urine", "pelvic pain"],
           &["urinalysis", "urine culture"],
           &["antibiotics", "increased fluids"]),
        dx("HIV",
           &["swollen lymph nodes", "weight loss", "night sweats", "recurrent infections"],
           &["HIV test", "viral load test"],
           &["antiretroviral therapy", "prophylactic antibiotics"]),
        dx("tuberculosis",
           &["persistent cough", "night sweats", "weight loss", "coughing blood"],
           &["chest X-ray", "sputum culture", "tuberculin skin test"],
           &["antituberculosis drugs", "isolation"]),
        dx("hepatitis C",
           &["jaundice", "dark urine", "abdominal pain"],
           &["blood test", "viral load test", "liver biopsy"],
           &["antiviral therapy", "liver transplant"]),
        dx("sepsis",
           &["confusion", "rapid heart rate", "rapid breathing", "chills"],
           &["blood culture", "blood test", "lactate test"],
           &["intravenous antibiotics", "intravenous fluids", "vasopressors"]),
        dx("Lyme disease",
           &["bull's-eye rash", "joint pain", "chills"],
           &["blood test", "physical examination"],
           &["doxycycline", "amoxicillin"]),
    ] },
    Specialty { name: "nephrology", share: 0.06, diagnoses: &[
        dx("chronic kidney disease",
           &["leg swelling", "reduced urine output", "itching", "foamy urine"],
           &["blood test", "urinalysis", "kidney ultrasound"],
           &["ACE inhibitors", "dialysis", "kidney transplant"]),
        dx("kidney stones",
           &["flank pain", "blood in urine", "vomiting"],
           &["CT scan", "ultrasound", "urinalysis"],
           &["analgesics", "lithotripsy", "ureteroscopy"]),
        dx("acute kidney injury",
           &["reduced urine output", "leg swelling", "confusion"],
           &["blood test", "urinalysis"],
           &["intravenous fluids", "dialysis"]),
        dx("glomerulonephritis",
           &["blood in urine", "foamy urine", "high blood pressure", "swelling"],
           &["urinalysis", "kidney biopsy", "blood test"],
           &["corticosteroids", "immunosuppressants", "ACE inhibitors"]),
        dx("polycystic kidney disease",
           &["flank pain", "high blood pressure", "blood in urine"],
           &["ultrasound", "CT scan", "genetic test"],
           &["tolvaptan", "ACE inhibitors", "dialysis"]),
    ] },
    Specialty { name: "rheumatology", share: 0.05, diagnoses: &[
        dx("rheumatoid arthritis",
           &["joint pain", "morning stiffness", "joint swelling"],
           &["blood test", "X-ray", "ultrasound"],
           &["methotrexate", "biologics", "corticosteroids"]),
        dx("gout",
           &["sudden joint pain", "joint swelling", "joint redness"],
           &["joint fluid test", "blood test"],
           &["NSAIDs", "colchicine", "allopurinol"]),
        dx("lupus",
           &["butterfly rash", "joint pain", "photosensitivity", "mouth ulcers"],
           &["ANA test", "urinalysis"],
           &["hydroxychloroquine", "corticosteroids", "immunosuppressants"]),
        dx("ankylosing spondylitis",
           &["back pain", "morning stiffness", "reduced spinal flexibility"],
           &["X-ray", "MRI", "HLA-B27 test"],
           &["NSAIDs", "biologics", "physiotherapy"]),
        dx("fibromyalgia",
           &["widespread pain", "sleep problems", "cognitive difficulties"],
           &["physical examination", "blood test"],
           &["exercise therapy", "antidepressants", "pregabalin"]),
    ] },
    Specialty { name: "dermatology", share: 0.05, diagnoses: &[
        dx("atopic dermatitis",
           &["itching", "dry skin", "red rash"],
           &["physical examination", "patch test"],
           &["emollients", "topical corticosteroids", "antihistamines"]),
        dx("acne",
           &["pimples", "blackheads", "oily skin"],
           &["physical examination", "hormone test"],
           &["topical retinoids", "antibiotics", "isotretinoin"]),
        dx("psoriasis",
           &["scaly patches", "itching", "cracked skin"],
           &["physical examination", "skin biopsy"],
           &["topical corticosteroids", "phototherapy", "biologics"]),
        dx("basal cell carcinoma",
           &["pearly bump", "non-healing sore"],
           &["skin biopsy", "dermoscopy"],
           &["surgical excision", "Mohs surgery", "cryotherapy"]),
        dx("melanoma",
           &["changing mole", "irregular mole border", "bleeding mole"],
           &["dermoscopy", "skin biopsy"],
           &["surgical excision", "immunotherapy", "targeted therapy"]),
    ] },
];

/// The medical table's schema: the quasi-identifiers age, sex and zip, then the sensitive
/// attributes. Every column is non-null.
pub fn medical_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("patient_id", DataType::Int64, false),
        Field::new("age", DataType::Int32, false),
        Field::new("sex", DataType::Utf8, false),
        Field::new("zip", DataType::Utf8, false),
        Field::new("physician", DataType::Utf8, false),
        Field::new("specialty", DataType::Utf8, false),
        Field::new("diagnosis", DataType::Utf8, false),
        Field::new("symptom", DataType::Utf8, false),
        Field::new("diagnostic_method", DataType::Utf8, false),
        Field::new("treatment", DataType::Utf8, false),
    ]))
}

/// Writes `rows` generated patients of the medical table ([`medical_schema`]) to `out`
/// (Parquet, zstd), `seed` deciding every value, one row per patient with ids 1..=rows. Like
/// [`super::write_patients`]: a batch at a time in bounded memory, and `out` is the whole
/// table or is left as it was.
pub fn write_medical(out: &Path, rows: usize, seed: u64) -> Result<()> {
    write_table(out, rows, MedicalGenerator::new(seed))
}

/// The labels of one column, each once, in the order first seen; a label's code is its index.
#[derive(Default)]
struct Dictionary {
    labels: Vec<&'static str>,
    codes: HashMap<&'static str, u16>,
}

impl Dictionary {
    fn code(&mut self, label: &'static str) -> u16 {
        *self.codes.entry(label).or_insert_with(|| {
            self.labels.push(label);
            // a few hundred labels at most: the dictionary keys are u16
            (self.labels.len() - 1) as u16
        })
    }

    /// A choice among `labels`, ordered from most to least frequent.
    fn ranked(&mut self, labels: &[&'static str]) -> Choice {
        Choice::ranked(labels.iter().map(|label| self.code(label)).collect())
    }

    fn into_array(self) -> ArrayRef {
        Arc::new(StringArray::from(self.labels))
    }
}

/// A draw among dictionary codes, the `n`-th with weight 1/n.
struct Choice {
    codes: Vec<u16>,
    cumulative: Vec<f64>,
}

impl Choice {
    fn ranked(codes: Vec<u16>) -> Self {
        let cumulative = cumulative((1..=codes.len()).map(|rank| 1.0 / rank as f64));
        Self { codes, cumulative }
    }

    fn draw(&self, rng: &mut SplitMix64) -> u16 {
        self.codes[draw_index(&self.cumulative, rng)]
    }
}

/// What is drawn given a diagnosis.
struct DiagnosisChoices {
    symptoms: Choice,
    methods: Choice,
    treatments: Choice,
}

/// Shuffles `items` in place (Fisher–Yates).
pub(super) fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// Draws the medical table, batch by batch.
struct MedicalGenerator {
    rng: SplitMix64,
    schema: SchemaRef,
    zips: Categorical,
    sexes: Categorical,
    age_decades: Vec<f64>,
    /// `dr-0001`, ... with their workloads.
    physicians: Categorical,
    /// The specialty code of each physician code.
    specialty_of: Vec<u16>,
    /// The specialty names, in the order of [`SPECIALTIES`].
    specialties: ArrayRef,
    /// By specialty code: its diagnoses.
    diagnoses_of: Vec<Choice>,
    /// The diagnosis names, in the order of [`SPECIALTIES`].
    diagnoses: ArrayRef,
    /// By diagnosis code.
    given_diagnosis: Vec<DiagnosisChoices>,
    generic_symptoms: Choice,
    symptoms: ArrayRef,
    methods: ArrayRef,
    treatments: ArrayRef,
    next_id: i64,
}

impl MedicalGenerator {
    fn new(seed: u64) -> Self {
        let mut rng = SplitMix64(seed);
        // first, as for the patients table: the same seed gives the same zip codes
        let zips = zip_codes(&mut rng);

        // each specialty gets its share of the physicians (stratified, so exactly when the
        // shares are multiples of 1/PHYSICIANS), dealt out to the names at random
        let shares = cumulative(SPECIALTIES.iter().map(|specialty| specialty.share));
        let mut specialty_of: Vec<u16> = (0..PHYSICIANS)
            .map(|slot| {
                let u = (slot as f64 + 0.5) / PHYSICIANS as f64;
                shares.partition_point(|&c| c <= u).min(shares.len() - 1) as u16
            })
            .collect();
        shuffle(&mut specialty_of, &mut rng);
        // workloads 1/rank^0.8, the ranks dealt out at random too
        let mut ranks: Vec<usize> = (1..=PHYSICIANS).collect();
        shuffle(&mut ranks, &mut rng);
        let physician_labels: StringArray = (1..=PHYSICIANS)
            .map(|number| Some(format!("dr-{number:04}")))
            .collect();
        let workloads = ranks
            .iter()
            .map(|&rank| (rank as f64).powf(-WORKLOAD_EXPONENT))
            .collect();

        let mut diagnosis_codes = 0u16;
        let diagnoses_of = SPECIALTIES
            .iter()
            .map(|specialty| {
                let first = diagnosis_codes;
                diagnosis_codes += specialty.diagnoses.len() as u16;
                Choice::ranked((first..diagnosis_codes).collect())
            })
            .collect();
        let all_diagnoses = || SPECIALTIES.iter().flat_map(|s| s.diagnoses);
        let mut symptoms = Dictionary::default();
        let mut methods = Dictionary::default();
        let mut treatments = Dictionary::default();
        let generic_symptoms = symptoms.ranked(GENERIC_SYMPTOMS);
        let given_diagnosis = all_diagnoses()
            .map(|diagnosis| DiagnosisChoices {
                symptoms: symptoms.ranked(diagnosis.symptoms),
                methods: methods.ranked(diagnosis.methods),
                treatments: treatments.ranked(diagnosis.treatments),
            })
            .collect();
        Self {
            rng,
            schema: medical_schema(),
            zips,
            sexes: sexes(),
            age_decades: age_decades(),
            physicians: Categorical::from_labels(physician_labels, workloads),
            specialty_of,
            specialties: Arc::new(StringArray::from_iter_values(
                SPECIALTIES.iter().map(|specialty| specialty.name),
            )),
            diagnoses_of,
            diagnoses: Arc::new(StringArray::from(
                all_diagnoses()
                    .map(|diagnosis| diagnosis.name)
                    .collect::<Vec<_>>(),
            )),
            given_diagnosis,
            generic_symptoms,
            symptoms: symptoms.into_array(),
            methods: methods.into_array(),
            treatments: treatments.into_array(),
            next_id: 1,
        }
    }
}

impl BatchSource for MedicalGenerator {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn batch(&mut self, rows: usize) -> Result<RecordBatch> {
        let rng = &mut self.rng;
        let ids = Int64Array::from_iter_values(self.next_id..self.next_id + rows as i64);
        self.next_id += rows as i64;
        let mut ages = Vec::with_capacity(rows);
        let mut codes: [Vec<u16>; 8] = Default::default();
        for column in &mut codes {
            column.reserve_exact(rows);
        }
        let [
            sex,
            zip,
            physician,
            specialty,
            diagnosis,
            symptom,
            method,
            treatment,
        ] = &mut codes;
        for _ in 0..rows {
            ages.push(draw_age(&self.age_decades, rng));
            sex.push(self.sexes.draw(rng));
            zip.push(self.zips.draw(rng));
            let doctor = self.physicians.draw(rng);
            let field = self.specialty_of[doctor as usize];
            let disease = self.diagnoses_of[field as usize].draw(rng);
            let given = &self.given_diagnosis[disease as usize];
            physician.push(doctor);
            specialty.push(field);
            diagnosis.push(disease);
            symptom.push(if rng.unit() < GENERIC_SYMPTOM_SHARE {
                self.generic_symptoms.draw(rng)
            } else {
                given.symptoms.draw(rng)
            });
            method.push(given.methods.draw(rng));
            treatment.push(given.treatments.draw(rng));
        }
        let [
            sex,
            zip,
            physician,
            specialty,
            diagnosis,
            symptom,
            method,
            treatment,
        ] = codes;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(ids),
            Arc::new(Int32Array::from(ages)),
            self.sexes.column(sex)?,
            self.zips.column(zip)?,
            self.physicians.column(physician)?,
            label_column(&self.specialties, specialty)?,
            label_column(&self.diagnoses, diagnosis)?,
            label_column(&self.symptoms, symptom)?,
            label_column(&self.methods, method)?,
            label_column(&self.treatments, treatment)?,
        ];
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Int32Type, Int64Type};

    use super::*;

    fn strings<'a>(batch: &'a RecordBatch, name: &str) -> &'a StringArray {
        batch.column_by_name(name).unwrap().as_string::<i32>()
    }

    #[test]
    fn static_tables_have_the_promised_shape() {
        assert_eq!(SPECIALTIES.len(), 12);
        let total: f64 = SPECIALTIES.iter().map(|s| s.share).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let shares: HashSet<u64> = SPECIALTIES.iter().map(|s| s.share.to_bits()).collect();
        assert!(shares.len() > 1, "the shares are unequal");
        let mut names = HashSet::new();
        for specialty in SPECIALTIES {
            assert!(
                (4..=8).contains(&specialty.diagnoses.len()),
                "{}",
                specialty.name
            );
            for diagnosis in specialty.diagnoses {
                assert!(names.insert(diagnosis.name), "{} twice", diagnosis.name);
                assert!(
                    (2..=5).contains(&diagnosis.symptoms.len()),
                    "{}",
                    diagnosis.name
                );
                assert!(
                    (2..=4).contains(&diagnosis.methods.len()),
                    "{}",
                    diagnosis.name
                );
                assert!(
                    (2..=4).contains(&diagnosis.treatments.len()),
                    "{}",
                    diagnosis.name
                );
                for symptom in diagnosis.symptoms {
                    assert!(!GENERIC_SYMPTOMS.contains(symptom), "{symptom} is generic");
                }
            }
        }
    }

    #[test]
    fn same_seed_same_batch() {
        let first = MedicalGenerator::new(7).batch(2000).unwrap();
        let again = MedicalGenerator::new(7).batch(2000).unwrap();
        let other = MedicalGenerator::new(8).batch(2000).unwrap();
        assert_eq!(first, again);
        assert_ne!(first, other);
    }

    #[test]
    fn columns_match_the_schema() {
        let mut generator = MedicalGenerator::new(1);
        let batch = generator.batch(1000).unwrap();
        assert_eq!(batch.schema(), medical_schema());
        let expected = [
            ("patient_id", DataType::Int64),
            ("age", DataType::Int32),
            ("sex", DataType::Utf8),
            ("zip", DataType::Utf8),
            ("physician", DataType::Utf8),
            ("specialty", DataType::Utf8),
            ("diagnosis", DataType::Utf8),
            ("symptom", DataType::Utf8),
            ("diagnostic_method", DataType::Utf8),
            ("treatment", DataType::Utf8),
        ];
        let schema = medical_schema();
        let fields: Vec<(&str, &DataType, bool)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().as_str(), f.data_type(), f.is_nullable()))
            .collect();
        let expected: Vec<(&str, &DataType, bool)> =
            expected.iter().map(|(n, t)| (*n, t, false)).collect();
        assert_eq!(fields, expected);
        for column in batch.columns() {
            assert_eq!(column.null_count(), 0);
        }
        // one row per patient, ids running on across batches
        let ids = batch.column(0).as_primitive::<Int64Type>();
        assert!(ids.values().iter().copied().eq(1..=1000));
        let next = generator.batch(500).unwrap();
        let ids = next.column(0).as_primitive::<Int64Type>();
        assert!(ids.values().iter().copied().eq(1001..=1500));
        // the quasi-identifiers' domains
        let ages = batch.column(1).as_primitive::<Int32Type>();
        assert!(ages.values().iter().all(|age| (0..=100).contains(age)));
        assert!(
            strings(&batch, "sex")
                .iter()
                .flatten()
                .all(|s| s == "F" || s == "M")
        );
        assert!(
            strings(&batch, "zip")
                .iter()
                .flatten()
                .all(|z| z.len() == 5 && z.parse::<u32>().is_ok())
        );
    }

    #[test]
    fn physicians_determine_specialties() {
        let batch = MedicalGenerator::new(11).batch(50_000).unwrap();
        let physicians = strings(&batch, "physician");
        let specialties = strings(&batch, "specialty");
        let mut specialty_of = HashMap::new();
        let mut workload: HashMap<&str, usize> = HashMap::new();
        for row in 0..batch.num_rows() {
            let physician = physicians.value(row);
            assert!(
                physician.len() == 7
                    && physician.starts_with("dr-")
                    && (1..=2000).contains(&physician[3..].parse::<u32>().unwrap()),
                "{physician}"
            );
            let specialty = specialties.value(row);
            assert_eq!(
                *specialty_of.entry(physician).or_insert(specialty),
                specialty,
                "{physician}"
            );
            *workload.entry(physician).or_default() += 1;
        }
        // the least busy physician expects ~6 of 50,000 rows: almost all of them show up
        assert!(specialty_of.len() > 1950, "{}", specialty_of.len());
        let in_use: HashSet<&str> = specialty_of.values().copied().collect();
        assert_eq!(in_use.len(), SPECIALTIES.len());
        // the busiest has 1/sum(rank^-0.8) ≈ 1/18.4 of the rows, about 2,700
        let busiest = workload.values().copied().max().unwrap();
        assert!((2300..3200).contains(&busiest), "{busiest}");
    }

    #[test]
    fn specialties_get_their_shares_of_physicians() {
        let generator = MedicalGenerator::new(3);
        for (code, specialty) in SPECIALTIES.iter().enumerate() {
            let count = generator
                .specialty_of
                .iter()
                .filter(|&&s| s as usize == code)
                .count();
            assert_eq!(
                count,
                (specialty.share * PHYSICIANS as f64).round() as usize,
                "{}",
                specialty.name
            );
        }
    }

    #[test]
    fn sensitive_values_follow_their_lists() {
        let batch = MedicalGenerator::new(5).batch(50_000).unwrap();
        let by_name: HashMap<&str, &Specialty> = SPECIALTIES.iter().map(|s| (s.name, s)).collect();
        let (specialties, diagnoses) = (strings(&batch, "specialty"), strings(&batch, "diagnosis"));
        let symptoms = strings(&batch, "symptom");
        let (methods, treatments) = (
            strings(&batch, "diagnostic_method"),
            strings(&batch, "treatment"),
        );
        let mut generic = 0;
        for row in 0..batch.num_rows() {
            let specialty = by_name[specialties.value(row)];
            let diagnosis = specialty
                .diagnoses
                .iter()
                .find(|d| d.name == diagnoses.value(row))
                .unwrap_or_else(|| panic!("{} not in {}", diagnoses.value(row), specialty.name));
            let symptom = symptoms.value(row);
            if GENERIC_SYMPTOMS.contains(&symptom) {
                generic += 1;
            } else {
                assert!(diagnosis.symptoms.contains(&symptom), "{symptom}");
            }
            assert!(diagnosis.methods.contains(&methods.value(row)));
            assert!(diagnosis.treatments.contains(&treatments.value(row)));
        }
        // 10% of 50,000, give or take 7 standard deviations (67)
        assert!((4500..5500).contains(&generic), "{generic}");
    }

    #[test]
    fn writes_complete_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.parquet");
        write_medical(&path, 200_000, 1).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let reader = datafusion::parquet::file::reader::SerializedFileReader::new(file).unwrap();
        use datafusion::parquet::file::reader::FileReader;
        assert_eq!(reader.metadata().file_metadata().num_rows(), 200_000);
        // no temporary file left behind
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
