//! The rules over rows (the policy loader) and over label arrays (`anon hierarchy build`)
//! agree, file by file; the borrowed field splitter agrees with a plain character-by-character
//! reference; the unique-leaves check survives hash collisions.

use std::sync::Arc;

use datafusion::arrow::array::{DictionaryArray, StringArray, StringViewArray, UInt32Array};

use super::super::TreeHierarchy;
use super::*;

/// The splitter as first written: character by character, one `String` per field (the
/// reference the borrowed splitter must match).
fn reference_split(line: &str) -> std::result::Result<Vec<String>, &'static str> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("a quoted field is not closed"),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(';') => fields.push(field),
                Some(_) => return Err("a closing quote is not followed by ';'"),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(';') => break,
                    Some(c) => field.push(c),
                }
            }
            fields.push(field);
        }
    }
}

/// A small deterministic generator (xorshift64).
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn borrowed_fields_match_the_reference_splitter() {
    let by_hand: [(&str, Vec<&str>); 6] = [
        ("a;b;*", vec!["a", "b", "*"]),
        ("a;", vec!["a", ""]),
        ("", vec![""]),
        (
            "\"a;b\";\"say \"\"hi\"\"\";*",
            vec!["a;b", "say \"hi\"", "*"],
        ),
        ("é\"x;\"\"\"\"", vec!["é\"x", "\""]),
        ("\"\";;\"\"", vec!["", "", ""]),
    ];
    for (line, fields) in by_hand {
        let got = split_fields(line).unwrap();
        assert_eq!(got, fields, "{line:?}");
    }
    assert_eq!(
        split_fields("\"open;*").unwrap_err(),
        "a quoted field is not closed"
    );
    assert_eq!(
        split_fields("\"a\"b;*").unwrap_err(),
        "a closing quote is not followed by ';'"
    );
    // random lines over an alphabet of the characters that matter
    let alphabet = ['a', ';', '"', 'é', ' ', '*'];
    let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let len = draw.below(12);
        let line: String = (0..len)
            .map(|_| alphabet[draw.below(alphabet.len())])
            .collect();
        let want = reference_split(&line);
        let got = split_fields(&line).map(|f| f.into_iter().map(|c| c.into_owned()).collect());
        assert_eq!(got, want, "{line:?}");
    }
}

/// `text`'s lines split into fields (no blank lines: line r + 1 is row r).
fn rows_of(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| {
            split_fields(line)
                .unwrap()
                .into_iter()
                .map(|f| f.into_owned())
                .collect()
        })
        .collect()
}

/// Level `level` of rectangular `rows` as plain strings.
fn plain(rows: &[Vec<String>], level: usize) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(
        rows.iter().map(|r| r[level].as_str()),
    ))
}

/// Level `level` of `rows` as a dictionary whose values hold every label twice (two ids for
/// one text, the rows alternating between them) and an unused empty label, so that the
/// check must compare labels by text, not by id.
fn doubled_dictionary(rows: &[Vec<String>], level: usize) -> ArrayRef {
    let mut values: Vec<&str> = vec![""];
    let mut keys = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let text = row[level].as_str();
        let first = match values.iter().position(|v| *v == text && !v.is_empty()) {
            Some(i) => i,
            None => {
                values.push(text);
                values.push(text);
                values.len() - 2
            }
        };
        keys.push((first + r % 2) as u32);
    }
    let values: ArrayRef = Arc::new(StringViewArray::from(values));
    Arc::new(DictionaryArray::new(UInt32Array::from(keys), values))
}

/// Good and bad files, each rectangular and without blank lines.
const FILES: [&str; 12] = [
    "a;x;*\nb;x;*\nc;y;*\n",
    "\"a;b\";\"g\"\"\";*\n\"\";g\";*\n",
    "only;*\n",
    "a\n",
    "a\nb\n",
    "a;;*\nb;x;*\n",
    "a;x;*\nb;x;\n",
    "a;x;*\nb;x;*\nc;y;*\nb;x;*\n",
    "a;x;G;*\nb;y;G;*\nc;y;H;*\n",
    "a;x;*\nb;x;*\nc;y;ALL\n",
    "a;x;G;*\nb;x;G;*\nc;x;H;*\nd;;H;*\n",
    "1;[0, 10);*\n10;[10, 20);*\n2;[0, 10);*\n",
];

#[test]
fn the_loader_and_the_label_arrays_agree_file_by_file() {
    for text in FILES {
        let rows = rows_of(text);
        let loaded = TreeHierarchy::from_csv_str("h", "h.csv", text).map(|_| ());
        let height = rows[0].len();
        let leaves = plain(&rows, 0);
        let plain_levels: Vec<ArrayRef> = (1..height).map(|l| plain(&rows, l)).collect();
        let dictionary_levels: Vec<ArrayRef> =
            (1..height).map(|l| doubled_dictionary(&rows, l)).collect();
        for levels in [plain_levels, dictionary_levels] {
            let checked = check_arrays("h", Origin::File("h.csv"), &leaves, &levels).map(|_| ());
            match (&loaded, &checked) {
                (Ok(()), Ok(())) => {}
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
                _ => panic!("{text:?}: the loader says {loaded:?}, the arrays {checked:?}"),
            }
        }
    }
    // every rule but well-formed (the arrays are not text) and covers the data failed above
    let failed: Vec<String> = FILES
        .iter()
        .filter_map(|text| TreeHierarchy::from_csv_str("h", "h.csv", text).err())
        .map(|e| e.to_string())
        .collect();
    for rule in [
        Rule::Labelled,
        Rule::UniqueLeaves,
        Rule::OneParent,
        Rule::SingleTop,
    ] {
        assert!(
            failed.iter().any(|e| e.ends_with(&rule.tag())),
            "{rule:?}: {failed:?}"
        );
    }
}

#[test]
fn label_arrays_name_the_line_and_the_rule() {
    let leaves: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
    // by hand: line 3's label at level 1 is NULL, written as an empty field
    let level1: ArrayRef = Arc::new(DictionaryArray::new(
        UInt32Array::from(vec![Some(0), Some(0), None]),
        Arc::new(StringArray::from(vec!["g"])),
    ));
    let top: ArrayRef = Arc::new(StringArray::from(vec!["*"; 3]));
    let e = check_arrays(
        "c",
        Origin::File("c.csv"),
        &leaves,
        &[Arc::clone(&level1), Arc::clone(&top)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("c.csv, line 3, level 1: the label is empty") && e.ends_with("[rule: labelled]"),
        "{e}"
    );
    // a level shorter than the leaves: line 3 has 2 fields where line 1 has 3
    let short: ArrayRef = Arc::new(StringArray::from(vec!["g", "g"]));
    let e = check_arrays("c", Origin::File("c.csv"), &leaves, &[short, top])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("c.csv, line 3: 2 fields, but line 1 has 3 (ragged hierarchy)")
            && e.ends_with("[rule: same levels]"),
        "{e}"
    );
    // no leaves at all
    let none: ArrayRef = Arc::new(StringArray::from(Vec::<&str>::new()));
    let e = check_arrays("c", Origin::File("c.csv"), &none, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("c.csv is empty (no lines) [rule: not empty]"),
        "{e}"
    );
}

#[test]
fn colliding_hashes_are_compared_as_text() {
    // every leaf of one length has one hash: collisions everywhere
    let by_length = |s: &str| s.len() as u64;
    let check = |leaves: &[&str]| {
        check_unique_leaves(
            "h",
            Origin::File("h.csv"),
            leaves.len(),
            |r| leaves[r],
            Lines::Consecutive,
            by_length,
        )
        .map_err(|e| e.to_string())
    };
    // ab, cd, ef collide but differ
    assert!(check(&["ab", "cd", "ef", "x"]).is_ok());
    // by hand: line 4 repeats line 2
    let e = check(&["ab", "cd", "ef", "cd", "ab"]).unwrap_err();
    assert!(
        e.contains("h.csv, line 4: duplicate leaf (the same value as line 2)"),
        "{e}"
    );
    // against a brute force: the first row equal to an earlier one, and that row's first
    let mut draw = Draw(42);
    let words = ["a", "b", "c", "aa", "ab", "ba", "abc", "cab"];
    for _ in 0..2_000 {
        let leaves: Vec<&str> = (0..draw.below(7) + 1)
            .map(|_| words[draw.below(words.len())])
            .collect();
        let brute = (0..leaves.len()).find_map(|r| {
            (0..r).find(|&q| leaves[q] == leaves[r]).map(|q| {
                format!(
                    "line {}: duplicate leaf (the same value as line {})",
                    r + 1,
                    q + 1
                )
            })
        });
        match (brute, check(&leaves)) {
            (None, Ok(())) => {}
            (Some(want), Err(e)) => assert!(e.contains(&want), "{leaves:?}: {e}"),
            (want, got) => panic!("{leaves:?}: want {want:?}, got {got:?}"),
        }
    }
}
