//! Golden transcripts: each `tests/golden/NAME.events` script drives one
//! egress and one ingress controller (both started at 0, interval 1 ms)
//! and the transcript of their decisions is compared with `NAME.expected`.
//! `TESSERA_BLESS=1 cargo test -p cluster-cc --test golden` rewrites the
//! transcripts (review the diff: each line is a decision of the thesis's
//! equations).
//!
//! Script syntax, one item per line (`#` starts a comment):
//!
//! ```text
//! egress threshold q=100 notify=last|all
//! egress rate-price c=PPS r=R
//! egress queue-price q_o=Q u=U r=R
//! ingress weight incr=N max=N min=N increase=every|if-no-becn
//! ingress aimd w=PPS m=M max=PPS
//! ingress price k=K w=W max=PPS
//! MS sample q=PKTS in=CUMULATIVE out=CUMULATIVE   egress poll
//! MS poll injected=CUMULATIVE                      ingress poll
//! MS signal                                        the last egress signal reaches the ingress
//! MS becn | MS price P                             a given signal reaches the ingress
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base::Instant;
use cc::{
    Allowance, EgressControl, EgressSample, EgressScheme, Increase, IngressControl, IngressScheme,
    Notify, Signal,
};

const MS: Duration = Duration::from_millis(1);

fn kv<'a>(words: &'a [&'a str], key: &str) -> &'a str {
    words
        .iter()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("missing {key}= in {words:?}"))
}

fn num(words: &[&str], key: &str) -> f64 {
    kv(words, key)
        .parse()
        .unwrap_or_else(|_| panic!("bad {key}"))
}

fn sig(s: Option<Signal>) -> String {
    match s {
        None => "-".into(),
        Some(Signal::Becn) => "BECN".into(),
        Some(Signal::Price(p)) => format!("price {p:.6e}"),
    }
}

fn allowance(a: Allowance, cur: f64) -> String {
    match a {
        Allowance::Weight(w) => format!("weight {w} (current {cur:.0} pps)"),
        Allowance::Rate(r) => format!("rate {r:.1} (current {cur:.0} pps)"),
    }
}

fn replay(script: &str) -> String {
    let mut out = String::new();
    let mut egress: Option<EgressControl> = None;
    let mut ingress: Option<IngressControl> = None;
    let mut last: Option<Signal> = None;
    for line in script.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&first) = words.first() else {
            continue;
        };
        let rest = &words[1..];
        match first {
            "egress" => {
                let scheme = match rest.first().copied() {
                    Some("threshold") => EgressScheme::Threshold {
                        q_threshold: num(rest, "q") as u32,
                        notify: if kv(rest, "notify") == "all" {
                            Notify::All
                        } else {
                            Notify::LastSource
                        },
                    },
                    Some("rate-price") => EgressScheme::RatePrice {
                        capacity_pps: num(rest, "c"),
                        r: num(rest, "r"),
                    },
                    Some("queue-price") => EgressScheme::QueuePrice {
                        q_o: num(rest, "q_o"),
                        u: num(rest, "u"),
                        r: num(rest, "r"),
                    },
                    other => panic!("unknown egress scheme {other:?}"),
                };
                egress = Some(EgressControl::new(Instant::ZERO, MS, scheme));
                let _ = writeln!(out, "egress {:?} notify {:?}", scheme, scheme.notify());
            }
            "ingress" => {
                let scheme = match rest.first().copied() {
                    Some("weight") => IngressScheme::Weight {
                        incr: num(rest, "incr") as u32,
                        max: num(rest, "max") as u32,
                        min: num(rest, "min") as u32,
                        increase: if kv(rest, "increase") == "every" {
                            Increase::EveryInterval
                        } else {
                            Increase::IfNoBecn
                        },
                    },
                    Some("aimd") => IngressScheme::RateAimd {
                        w: num(rest, "w"),
                        m: num(rest, "m"),
                        max_rate: num(rest, "max"),
                    },
                    Some("price") => IngressScheme::Price {
                        k: num(rest, "k"),
                        w: num(rest, "w"),
                        max_rate: num(rest, "max"),
                    },
                    other => panic!("unknown ingress scheme {other:?}"),
                };
                let c = IngressControl::new(Instant::ZERO, MS, scheme);
                let _ = writeln!(
                    out,
                    "ingress {:?} starts at {}",
                    scheme,
                    allowance(c.allowance(), 0.0)
                );
                ingress = Some(c);
            }
            ms => {
                let ms: f64 = ms.parse().unwrap_or_else(|_| panic!("bad time {ms:?}"));
                let at = Instant::from_nanos((ms * 1e6) as u64);
                let what = rest.first().copied().unwrap_or("");
                let text = match what {
                    "sample" => {
                        let e = egress.as_mut().expect("egress first");
                        let s = EgressSample {
                            queue_len: num(rest, "q") as u32,
                            pkts_in: num(rest, "in") as u64,
                            pkts_out: num(rest, "out") as u64,
                        };
                        let d = e.poll(at, s);
                        if d.is_some() {
                            last = d;
                        }
                        format!("egress {}", sig(d))
                    }
                    "poll" => {
                        let i = ingress.as_mut().expect("ingress first");
                        let a = i.poll(at, num(rest, "injected") as u64);
                        format!("ingress {}", allowance(a, i.current_rate()))
                    }
                    "signal" | "becn" | "price" => {
                        let i = ingress.as_mut().expect("ingress first");
                        let s = match what {
                            "becn" => Signal::Becn,
                            "price" => Signal::Price(rest[1].parse().expect("price")),
                            _ => last.expect("a signal was sent"),
                        };
                        let a = i.on_signal(s);
                        format!(
                            "{} -> ingress {}",
                            sig(Some(s)),
                            allowance(a, i.current_rate())
                        )
                    }
                    other => panic!("unknown item {other:?}"),
                };
                let _ = writeln!(out, "{ms:>7.3} ms  {line:<44} => {text}");
            }
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_transcripts() {
    let bless = std::env::var("TESSERA_BLESS").is_ok_and(|v| v == "1");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "events"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 5, "golden scripts missing");
    let mut failures = Vec::new();
    for s in &scripts {
        let got = replay(&std::fs::read_to_string(s).expect("read script"));
        let exp_path = s.with_extension("expected");
        if bless {
            std::fs::write(&exp_path, &got).expect("write expected");
            continue;
        }
        let want = std::fs::read_to_string(&exp_path)
            .unwrap_or_else(|_| panic!("{} missing; run with TESSERA_BLESS=1", exp_path.display()));
        if got != want {
            failures.push(format!(
                "{}:\n--- expected\n{want}--- got\n{got}",
                s.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
