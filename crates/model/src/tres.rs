//! Trackable resources (TRES): counts as jobs and clusters give them, Slurm's
//! weight lists (`TRESBillingWeights`, `PriorityWeightTRES`) with their unit
//! suffixes, and the billable amount a running job charges per second
//! (`calc_job_billable_tres`: SUM, `MAX_TRES`, `MAX_TRES_GRES`).

use std::collections::BTreeMap;

use crate::InvalidValue;

/// TRES counts by lower-case name (`cpu`, `node`, `mem` in MiB, `gres/gpu`,
/// `license/x`, ...), sorted by name.
///
/// A map with the API of a `BTreeMap<String, f64>` (and its serialised
/// form: a map in name order), kept as a sorted vector: a job names a
/// handful of TRES, and a tree node has room for eleven, so a million jobs'
/// counts take a third of the memory this way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TresCounts(Vec<(String, f64)>);

/// The entries of a [`TresCounts`], in name order.
pub type TresIter<'a> = std::iter::Map<
    std::slice::Iter<'a, (String, f64)>,
    fn(&'a (String, f64)) -> (&'a String, &'a f64),
>;

impl TresCounts {
    /// No counts.
    pub const fn new() -> Self {
        TresCounts(Vec::new())
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// The count of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&f64> {
        self.position(name).ok().map(|i| &self.0[i].1)
    }

    /// Is `name` given?
    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    /// Set the count of `name`, returning the one it replaces.
    pub fn insert(&mut self, name: String, count: f64) -> Option<f64> {
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, count)),
            Err(i) => {
                self.0.insert(i, (name, count));
                None
            }
        }
    }

    /// Remove `name`'s count, returning it.
    pub fn remove(&mut self, name: &str) -> Option<f64> {
        self.position(name).ok().map(|i| self.0.remove(i).1)
    }

    /// `(name, count)` in name order.
    pub fn iter(&self) -> TresIter<'_> {
        fn pair((name, count): &(String, f64)) -> (&String, &f64) {
            (name, count)
        }
        self.0
            .iter()
            .map(pair as fn(&(String, f64)) -> (&String, &f64))
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(name, _)| name)
    }

    /// The counts, in name order.
    pub fn values(&self) -> impl Iterator<Item = &f64> {
        self.0.iter().map(|(_, count)| count)
    }

    /// How many TRES are given.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Are none given?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(String, f64)> for TresCounts {
    /// Later counts of a name replace earlier ones, as a map's would.
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(items: I) -> Self {
        let mut counts = TresCounts::new();
        for (name, count) in items {
            counts.insert(name, count);
        }
        counts.0.shrink_to_fit();
        counts
    }
}

impl<const N: usize> From<[(String, f64); N]> for TresCounts {
    fn from(items: [(String, f64); N]) -> Self {
        items.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a TresCounts {
    type Item = (&'a String, &'a f64);
    type IntoIter = TresIter<'a>;
    fn into_iter(self) -> TresIter<'a> {
        self.iter()
    }
}

impl std::ops::Index<&str> for TresCounts {
    type Output = f64;
    fn index(&self, name: &str) -> &f64 {
        self.get(name).expect("no such TRES")
    }
}

impl serde::Serialize for TresCounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for TresCounts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, f64>::deserialize(deserializer)?;
        Ok(map.into_iter().collect())
    }
}

/// A parsed weight list: per lower-case TRES name, the weight per base unit
/// (memory's base unit is the MiB, every other TRES's is one count).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WeightList {
    /// `(name, weight per base unit)`, in the order given.
    pub weights: Vec<(String, f64)>,
}

impl WeightList {
    /// The weight of one TRES, if listed.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.weights
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, w)| *w)
    }

    /// Is the list empty?
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }
}

/// Normalise a TRES name: lower case, as Slurm compares them.
pub fn tres_name(name: &str) -> String {
    name.trim().to_ascii_lowercase()
}

/// Is `name` already normal (`tres_name(name) == name`)? Without building
/// the normal form: nothing to trim (the trimmed name keeps its length) and
/// no ASCII upper case letter (the only bytes lower-casing changes).
pub fn is_tres_name(name: &str) -> bool {
    name.trim().len() == name.len() && !name.bytes().any(|b| b.is_ascii_uppercase())
}

/// A TRES weight's rule: a finite number, as written (`text`) and per base
/// unit as kept (`Config::check_values` applies it to a restored list).
pub(crate) fn checked_weight(weight: f64, text: &str, name: &str) -> Result<f64, InvalidValue> {
    if !weight.is_finite() {
        return Err(InvalidValue::new(format!(
            "`{text}` is not a weight for {name}"
        )));
    }
    Ok(weight)
}

/// Parse `CPU=1.0,Mem=0.25G,GRES/gpu=2.0`. A suffix K, M, G, T or P says the
/// weight is per that many base units (memory counts in MiB: `Mem=0.25G` is
/// 0.25 per GiB; other TRES count in ones: `CPU=1K` is 1 per 1024 CPUs).
pub fn parse_weight_list(text: &str) -> Result<WeightList, InvalidValue> {
    let mut weights = Vec::new();
    for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| InvalidValue::new(format!("`{item}` is not NAME=WEIGHT")))?;
        let name = tres_name(name);
        if name.is_empty() {
            return Err(InvalidValue::new(format!("`{item}` has no TRES name")));
        }
        let value = value.trim();
        let (number, suffix) = match value.chars().last() {
            Some(c) if c.is_ascii_alphabetic() => (&value[..value.len() - 1], Some(c)),
            _ => (value, None),
        };
        let weight = checked_weight(number.parse().unwrap_or(f64::NAN), value, &name)?;
        // How many base units the suffix names.
        let units = match suffix.map(|c| c.to_ascii_uppercase()) {
            None => 1.0,
            Some(s) => {
                let power = match s {
                    'K' => 1,
                    'M' => 2,
                    'G' => 3,
                    'T' => 4,
                    'P' => 5,
                    _ => {
                        return Err(InvalidValue::new(format!(
                            "unknown unit suffix `{s}` in `{item}` (K, M, G, T or P)"
                        )))
                    }
                };
                // Memory is counted in MiB: K is 1/1024 of the base unit.
                let power = if name == "mem" { power - 2 } else { power };
                1024f64.powi(power)
            }
        };
        if weights.iter().any(|(n, _)| *n == name) {
            return Err(InvalidValue::new(format!("{name} is weighted twice")));
        }
        let per_unit = checked_weight(weight / units, value, &name)?;
        weights.push((name, per_unit));
    }
    Ok(WeightList { weights })
}

/// Is this TRES counted per node (cpu, mem, node, gres/*), as opposed to a
/// global one (licenses, burst buffers, ...)?
pub fn is_node_tres(name: &str) -> bool {
    matches!(name, "cpu" | "mem" | "node") || name.starts_with("gres/")
}

/// How `MAX_TRES`-style flags combine the weighted TRES.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum BillingMode {
    /// The sum of every weighted TRES (the default).
    #[default]
    Sum,
    /// `MAX_TRES`: the largest weighted node TRES plus the sum of global TRES.
    MaxTres,
    /// `MAX_TRES_GRES`: the sum of GRES, plus the largest of cpu, mem and node,
    /// plus the sum of global TRES.
    MaxTresGres,
}

/// The billable TRES of an allocation: per second of running, how much usage
/// it charges. Without weights it is the CPU count.
pub fn billable_tres(counts: &TresCounts, weights: &WeightList, mode: BillingMode) -> f64 {
    if weights.is_empty() {
        return counts.get("cpu").copied().unwrap_or(0.0);
    }
    let weighted = weights
        .weights
        .iter()
        .filter(|(name, _)| name != "billing")
        .map(|(name, w)| (name.as_str(), counts.get(name).copied().unwrap_or(0.0) * w));
    match mode {
        BillingMode::Sum => weighted.map(|(_, v)| v).sum(),
        BillingMode::MaxTres => {
            let (mut max_node, mut global) = (0.0f64, 0.0);
            for (name, v) in weighted {
                if is_node_tres(name) {
                    max_node = max_node.max(v);
                } else {
                    global += v;
                }
            }
            max_node + global
        }
        BillingMode::MaxTresGres => {
            let (mut max_node, mut gres, mut global) = (0.0f64, 0.0, 0.0);
            for (name, v) in weighted {
                if name.starts_with("gres/") {
                    gres += v;
                } else if is_node_tres(name) {
                    max_node = max_node.max(v);
                } else {
                    global += v;
                }
            }
            gres + max_node + global
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_a_sorted_map() {
        let mut counts: TresCounts = [("mem".to_string(), 2.0), ("cpu".to_string(), 1.0)].into();
        assert_eq!(counts.insert("gres/gpu".to_string(), 4.0), None);
        assert_eq!(counts.insert("cpu".to_string(), 8.0), Some(1.0));
        let names: Vec<&String> = counts.keys().collect();
        assert_eq!(names, ["cpu", "gres/gpu", "mem"]);
        assert_eq!(counts.get("cpu"), Some(&8.0));
        assert_eq!(counts.get("node"), None);
        assert_eq!(counts["mem"], 2.0);
        // Serialised as the map it stands for, in name order.
        let json = serde_json::to_string(&counts).unwrap();
        assert_eq!(json, r#"{"cpu":8.0,"gres/gpu":4.0,"mem":2.0}"#);
        let back: TresCounts =
            serde_json::from_str(r#"{"mem":2.0,"cpu":8.0,"gres/gpu":4.0}"#).unwrap();
        assert_eq!(back, counts);
    }

    fn counts(items: &[(&str, f64)]) -> TresCounts {
        items.iter().map(|(n, c)| (n.to_string(), *c)).collect()
    }

    // Slurm's tres.shtml: CPU=1.0,Mem=0.25G,GRES/gpu=2.0,license/licA=1.5.
    #[test]
    fn slurm_documentation_billing_examples() {
        let w = parse_weight_list("CPU=1.0,Mem=0.25G,GRES/gpu=2.0,license/licA=1.5").unwrap();
        let one_cpu_8g = counts(&[("cpu", 1.0), ("mem", 8192.0)]);
        assert_eq!(billable_tres(&one_cpu_8g, &w, BillingMode::Sum), 3.0);
        let with_lic = counts(&[("cpu", 1.0), ("mem", 8192.0), ("license/lica", 1.0)]);
        assert_eq!(billable_tres(&with_lic, &w, BillingMode::Sum), 4.5);
        let ten_g = counts(&[("cpu", 1.0), ("mem", 10240.0), ("license/lica", 1.0)]);
        assert_eq!(billable_tres(&ten_g, &w, BillingMode::Sum), 5.0);
        assert_eq!(billable_tres(&one_cpu_8g, &w, BillingMode::MaxTres), 2.0);
        assert_eq!(
            billable_tres(&one_cpu_8g, &w, BillingMode::MaxTresGres),
            2.0
        );
    }

    // tres.shtml's MAX_TRES_GRES section (Slurm 25.05): "Adding a GPU to the
    // example job": (1*2.0) + MAX(1*1.0, 8*0.25) + (0*1.5), which the page
    // sums to 3.0 but is 2 + 2 + 0 = 4.0, what `assoc_mgr_tres_weighted`
    // computes (billable_gres added to the node maximum); the GRES are
    // summed outside the maximum. MAX_TRES puts the GPU inside it:
    // MAX(1, 2, 2) = 2.0; SUM: 1 + 2 + 2 = 5.0. Two GPUs: MAX_TRES_GRES
    // 4 + 2 = 6, MAX_TRES MAX(1, 2, 4) = 4; a license (global) is added
    // outside in both: + 1.5.
    #[test]
    fn slurm_documentation_max_tres_gres_with_gpus() {
        let w = parse_weight_list("CPU=1.0,Mem=0.25G,GRES/gpu=2.0,license/licA=1.5").unwrap();
        let job = |gpus: f64, licenses: f64| {
            counts(&[
                ("cpu", 1.0),
                ("mem", 8192.0),
                ("gres/gpu", gpus),
                ("license/lica", licenses),
            ])
        };
        assert_eq!(
            billable_tres(&job(1.0, 0.0), &w, BillingMode::MaxTresGres),
            4.0
        );
        assert_eq!(billable_tres(&job(1.0, 0.0), &w, BillingMode::MaxTres), 2.0);
        assert_eq!(billable_tres(&job(1.0, 0.0), &w, BillingMode::Sum), 5.0);
        assert_eq!(
            billable_tres(&job(2.0, 0.0), &w, BillingMode::MaxTresGres),
            6.0
        );
        assert_eq!(billable_tres(&job(2.0, 0.0), &w, BillingMode::MaxTres), 4.0);
        assert_eq!(
            billable_tres(&job(2.0, 1.0), &w, BillingMode::MaxTresGres),
            7.5
        );
        assert_eq!(billable_tres(&job(2.0, 1.0), &w, BillingMode::MaxTres), 5.5);
        // Slurm tests MAX_TRES_GRES before MAX_TRES (a substring of it).
        let flags = crate::config::PriorityFlags::parse("MAX_TRES_GRES").unwrap();
        assert!(flags.max_tres_gres && !flags.max_tres);
    }

    // priority_multifactor.shtml: CPU=1.0,Mem=0.25G on 16-CPU / 64 GiB nodes.
    #[test]
    fn slurm_documentation_sum_mode_jobs() {
        let w = parse_weight_list("CPU=1.0,Mem=0.25G").unwrap();
        let b = |cpu: f64, gib: f64| {
            billable_tres(
                &counts(&[("cpu", cpu), ("mem", gib * 1024.0)]),
                &w,
                BillingMode::Sum,
            )
        };
        assert_eq!(b(1.0, 60.0), 16.0);
        assert_eq!(b(16.0, 1.0), 16.25);
        assert_eq!(b(16.0, 60.0), 31.0);
    }

    #[test]
    fn memory_without_suffix_is_per_mib_and_no_weights_means_cpus() {
        let w = parse_weight_list("Mem=0.25").unwrap();
        assert_eq!(
            billable_tres(&counts(&[("mem", 8192.0)]), &w, BillingMode::Sum),
            2048.0
        );
        let none = WeightList::default();
        assert_eq!(
            billable_tres(
                &counts(&[("cpu", 12.0), ("mem", 1.0)]),
                &none,
                BillingMode::Sum
            ),
            12.0
        );
    }

    #[test]
    fn malformed_weight_lists_are_rejected() {
        for bad in ["CPU", "CPU=x", "=1", "CPU=1Q", "CPU=1,cpu=2", "CPU=inf"] {
            assert!(parse_weight_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_name_is_normal_exactly_when_normalising_keeps_it() {
        for name in [
            "cpu",
            "gres/gpu",
            "Cpu",
            " cpu",
            "cpu ",
            "mem\t",
            "gres/GPU:a100",
            "",
            "é",
            "\u{a0}cpu",
        ] {
            assert_eq!(is_tres_name(name), tres_name(name) == name, "{name:?}");
        }
    }
}
