//! A run whose progress stopped, judged from its ranks' logs: every rank silent for many times
//! its usual step time (a hung collective looks like this: GPUs busy, nothing printed), or one
//! rank left behind, silent, while the others go on. Pure: the caller reads the logs.

use super::alerts::{Alert, AlertKind};
use crate::units::run_duration;

/// Silence shorter than this is never a stall (a checkpoint, a short evaluation).
pub const STALL_MIN_MS: i64 = 30_000;
/// Silence this many times the run's mean step time is a stall.
pub const STALL_STEPS: i64 = 10;

/// What one rank's logs say about its pace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankPace {
    pub rank: usize,
    /// The latest step it printed (its global step, when its counter restarts every epoch),
    /// None when it prints no progress.
    pub step: Option<u64>,
    /// When its stdout or stderr was last written (Unix ms); None before it wrote anything.
    pub last_output_ms: Option<i64>,
}

/// The stall alert of a running run started at `started_ms`, as of `now_ms`, on `gpus`. The
/// usual step time is the run's mean: from the start to the leading rank's last output, over its
/// step; silence of [`STALL_STEPS`] such steps and at least [`STALL_MIN_MS`] is a stall. Only
/// ranks that print progress are judged (often rank 0 alone); a run that prints none raises
/// nothing.
pub fn stall(ranks: &[RankPace], started_ms: i64, now_ms: i64, gpus: &[u32]) -> Option<Alert> {
    let stepping: Vec<(usize, u64, i64)> = ranks
        .iter()
        .filter_map(|r| Some((r.rank, r.step.filter(|&s| s > 0)?, r.last_output_ms?)))
        .collect();
    let &(lead_rank, lead_step, lead_output) = stepping.iter().max_by_key(|&&(r, s, t)| {
        // The furthest on; of equals, the latest to write, then the lowest rank.
        (s, t, std::cmp::Reverse(r))
    })?;
    let step_ms = ((lead_output - started_ms) / i64::try_from(lead_step).ok()?).max(1);
    let after = (STALL_STEPS * step_ms).max(STALL_MIN_MS);
    let silent: Vec<&(usize, u64, i64)> = stepping
        .iter()
        .filter(|&&(_, _, t)| now_ms - t >= after)
        .collect();
    let pace = format!("a step took {} on average", seconds(step_ms));
    if silent.len() == stepping.len() {
        let since = stepping.iter().map(|&(_, _, t)| t).max()?;
        let who = if stepping.len() == 1 {
            format!("rank {lead_rank} has printed nothing")
        } else {
            "no rank has printed anything".to_string()
        };
        // In lockstep (DDP) the others wait for the rank that stopped first, one step on: the
        // one behind is where to look.
        let behind: Vec<&(usize, u64, i64)> = stepping
            .iter()
            .filter(|&&(_, s, _)| s < lead_step)
            .collect();
        let culprit = match behind.as_slice() {
            [] => String::new(),
            [&(rank, step, _)] => {
                format!(" Rank {rank} stopped first, at step {step}: look at it first.")
            }
            many => {
                let ranks: Vec<String> = many.iter().map(|&&(r, _, _)| r.to_string()).collect();
                format!(
                    " Ranks {} stopped behind the others: look at them first.",
                    ranks.join(", ")
                )
            }
        };
        return Some(Alert {
            kind: AlertKind::Stalled,
            gpus: gpus.to_vec(),
            since_ms: since,
            ranks: match behind.is_empty() {
                true => stepping.iter().map(|&(r, _, _)| r).collect(),
                false => behind.iter().map(|&&(r, _, _)| r).collect(),
            },
            message: format!(
                "The run has made no progress for {}: {who} since step {lead_step} \
                 ({pace}). It is hung (a collective waiting on a rank, a deadlock) \
                 or busy with something long (an evaluation, a checkpoint).{culprit}",
                run_duration(u64::try_from(now_ms - since).unwrap_or(0)),
            ),
            fix: "See where each rank waits: `py-spy dump --pid PID` (every rank), \
                  NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 on the next run; \
                  `gpudeck stop RUN` ends it."
                .into(),
        });
    }
    let behind: Vec<&&(usize, u64, i64)> =
        silent.iter().filter(|&&&(_, s, _)| s < lead_step).collect();
    let &&&(rank, step, since) = behind.iter().min_by_key(|&&&&(r, _, t)| (t, r))?;
    let more = match behind.len() {
        1 => String::new(),
        n => format!(
            " ({} more {} behind too)",
            n - 1,
            if n == 2 { "is" } else { "are" }
        ),
    };
    Some(Alert {
        kind: AlertKind::RankStalled,
        gpus: gpus.to_vec(),
        since_ms: since,
        ranks: behind.iter().map(|&&&(r, _, _)| r).collect(),
        message: format!(
            "Rank {rank} has printed nothing for {}, stuck at step {step} while rank \
             {lead_rank} is at step {lead_step} ({pace}){more}: it is hung or straggling, and \
             the others will wait for it at the next collective.",
            run_duration(u64::try_from(now_ms - since).unwrap_or(0)),
        ),
        fix: format!(
            "Read its log (gpudeck logs RUN --rank {rank}, --stderr too) for an error or a stalled \
             data loader; `py-spy dump --pid PID` shows where it waits."
        ),
    })
}

/// "1.2s", "45s", "0.3s".
fn seconds(ms: i64) -> String {
    if ms < 10_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        run_duration(u64::try_from(ms).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_767_225_600_000;

    fn pace(rank: usize, step: Option<u64>, at_s: i64) -> RankPace {
        RankPace {
            rank,
            step,
            last_output_ms: Some(T0 + at_s * 1000),
        }
    }

    #[test]
    fn every_rank_silent_for_many_steps_is_a_stalled_run() {
        // 20 steps in 24 s (1.2 s each), then nothing for 75 s: a hung collective.
        let ranks = [pace(0, Some(20), 24), pace(1, Some(20), 24)];
        let alert = stall(&ranks, T0, T0 + 99_000, &[0, 1]).expect("fires");
        assert_eq!(alert.kind, AlertKind::Stalled);
        assert_eq!(alert.since_ms, T0 + 24_000);
        assert_eq!(alert.ranks, vec![0, 1]);
        assert_eq!(
            alert.message,
            "The run has made no progress for 1m15s: no rank has printed anything since step 20 \
             (a step took 1.2s on average). It is hung (a collective waiting on a rank, a \
             deadlock) or busy with something long (an evaluation, a checkpoint)."
        );
        // Rank 1 stopped at step 20; rank 0 did step 21 and waits for it in the all-reduce.
        let lockstep = [pace(0, Some(21), 25), pace(1, Some(20), 24)];
        let alert = stall(&lockstep, T0, T0 + 100_000, &[0, 1]).expect("fires");
        assert_eq!(
            (alert.kind, alert.ranks.clone()),
            (AlertKind::Stalled, vec![1])
        );
        assert!(
            alert
                .message
                .ends_with(" Rank 1 stopped first, at step 20: look at it first."),
            "{}",
            alert.message
        );
        // 29 s of silence is under the floor, however quick the steps.
        assert_eq!(stall(&ranks, T0, T0 + 53_000, &[0, 1]), None);
    }

    #[test]
    fn slow_steps_need_a_longer_silence() {
        // One step every 10 s: 60 s of silence is six steps, not a stall; 100 s is.
        let ranks = [pace(0, Some(6), 60)];
        assert_eq!(stall(&ranks, T0, T0 + 120_000, &[0]), None);
        let alert = stall(&ranks, T0, T0 + 160_000, &[0]).expect("fires");
        assert!(
            alert
                .message
                .starts_with("The run has made no progress for 1m40s: rank 0 has printed nothing"),
            "{}",
            alert.message
        );
    }

    #[test]
    fn one_rank_left_behind_is_named_with_when_it_stopped() {
        // Rank 1 stopped at step 20 at 24 s; ranks 0 and 2 go on to step 60 at 72 s... and
        // beyond: they still write.
        let ranks = [
            pace(0, Some(60), 98),
            pace(1, Some(20), 24),
            pace(2, Some(59), 97),
        ];
        let alert = stall(&ranks, T0, T0 + 99_000, &[0, 1, 2]).expect("fires");
        assert_eq!(alert.kind, AlertKind::RankStalled);
        assert_eq!(alert.ranks, vec![1]);
        assert_eq!(alert.since_ms, T0 + 24_000);
        assert_eq!(
            alert.message,
            "Rank 1 has printed nothing for 1m15s, stuck at step 20 while rank 0 is at step 60 \
             (a step took 1.6s on average): it is hung or straggling, and the others will wait \
             for it at the next collective."
        );
        assert!(alert.fix.contains("gpudeck logs RUN --rank 1"));
    }

    #[test]
    fn quiet_ranks_that_print_no_progress_or_keep_up_are_not_stalled() {
        // Only rank 0 prints progress; rank 1 prints nothing at all.
        let only_rank_0 = [pace(0, Some(60), 98), pace(1, None, 2)];
        assert_eq!(stall(&only_rank_0, T0, T0 + 99_000, &[0, 1]), None);
        // Rank 1 printed its last step long ago but is not behind (it prints every 50 steps).
        let sparse = [pace(0, Some(60), 98), pace(1, Some(60), 20)];
        assert_eq!(stall(&sparse, T0, T0 + 99_000, &[0, 1]), None);
        // Nothing printed yet, or no step: nothing to judge.
        assert_eq!(stall(&[], T0, T0 + 99_000, &[0]), None);
        let unwritten = [RankPace {
            rank: 0,
            step: None,
            last_output_ms: None,
        }];
        assert_eq!(stall(&unwritten, T0, T0 + 999_000, &[0]), None);
    }
}
