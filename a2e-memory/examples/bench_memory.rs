//! `cargo xtask bench memory`: the embedded store at 100k memories.
//!
//! Two stores in one run, each printed as JSON lines:
//! - `bm25`: no embedder; 100k acknowledged single writes (one synced
//!   transaction each), the way agents write.
//! - `hybrid`: an in-process OpenAI-compatible embeddings server returning
//!   hashed bag-of-words vectors (`--dims`, default 384); writes go in
//!   batches of 500 (one embeddings request and one transaction per batch).
//!
//! For each: write throughput, search latency p50/p99 over `--queries`
//! queries after 10k and after 100k memories, and file size per memory
//! (database + WAL). Ratio lines compare the two sizes and the two stores.
//! Options: `--n 100000 --queries 300 --dims 384 --dir PATH --skip-hybrid
//! --bm25-batch 1`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use a2e_bench::args::flag;
use a2e_bench::report::round;
use a2e_bench::stats;
use a2e_memory::{
    Durability, EmbedderConfig, MemoryStore, NewMemory, OpenAiEmbedder, SearchQuery, SqliteStore,
    StoreOptions,
};
use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};

const NS: &str = "bench.notes";

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A word index with a Zipf-like skew over `n` words.
    fn word(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

fn vocabulary() -> Vec<String> {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ren", "ta", "vo", "sul", "pe", "dra", "no", "gi", "mor", "as", "te",
        "qui", "bel",
    ];
    (0..4096usize)
        .map(|i| {
            format!(
                "{}{}{}",
                SYL[i % 16],
                SYL[(i / 16) % 16],
                SYL[(i / 256) % 16]
            )
        })
        .collect()
}

fn sentence(rng: &mut Rng, vocab: &[String], words: usize) -> String {
    (0..words)
        .map(|_| vocab[rng.word(vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

async fn start_embedder(dims: usize) -> String {
    let app = axum::Router::new().route(
        "/v1/embeddings",
        post(move |Json(body): Json<Value>| async move {
            let inputs: Vec<String> = body["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let mut v = vec![0f32; dims];
                    for w in text.split_whitespace() {
                        let h = fnv(w.as_bytes());
                        v[(h % dims as u64) as usize] += 1.0;
                        v[((h >> 32) % dims as u64) as usize] += 0.5;
                    }
                    json!({"index": i, "embedding": v})
                })
                .collect();
            Json(json!({"data": data}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn file_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

/// The percentile `p` of sorted latencies, in microseconds.
fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    stats::percentile(sorted, p).map_or(f64::NAN, stats::us)
}

struct Figures {
    write_per_sec: f64,
    write_per_sec_first_tenth: f64,
    p50: [f64; 2],
    p99: [f64; 2],
    bytes_per_memory: f64,
}

async fn search_latencies(
    store: &SqliteStore,
    queries: &[String],
    label: &str,
    at: usize,
) -> (f64, f64) {
    // The first search after writes brings the handle's vectors up to date;
    // it is reported on its own.
    let start = Instant::now();
    store
        .search(SearchQuery::new("warm up", [NS]))
        .await
        .unwrap();
    let warmup = start.elapsed().as_secs_f64() * 1e6;
    let mut times = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    for q in queries {
        let start = Instant::now();
        let found = store
            .search(SearchQuery::new(q.as_str(), [NS]).top_k(5))
            .await
            .unwrap();
        times.push(start.elapsed());
        hits += found.len();
    }
    times.sort();
    let (p50, p99) = (percentile_us(&times, 0.5), percentile_us(&times, 0.99));
    println!(
        "{}",
        json!({"bench": "memory", "store": label, "phase": "search", "memories": at, "queries": queries.len(),
               "top_k": 5, "mean_hits": hits as f64 / queries.len() as f64, "p50_us": p50.round(), "p99_us": p99.round(),
               "first_search_us": warmup.round()})
    );
    (p50, p99)
}

async fn run(
    label: &str,
    db: PathBuf,
    options: StoreOptions,
    n: usize,
    batch: usize,
    queries: &[String],
) -> Figures {
    let store = SqliteStore::open(&db, options).await.unwrap();
    let vocab = vocabulary();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut written = 0usize;
    let mut write_time = Duration::ZERO;
    let mut p50 = [0.0; 2];
    let mut p99 = [0.0; 2];
    let mut first_tenth = 0.0;
    for (slot, target) in [(0usize, n / 10), (1, n)] {
        while written < target {
            let take = batch.min(target - written);
            let items: Vec<NewMemory> = (0..take)
                .map(|_| {
                    let words = 8 + (rng.next() % 9) as usize;
                    NewMemory::new(NS, sentence(&mut rng, &vocab, words))
                })
                .collect();
            let start = Instant::now();
            if batch == 1 {
                for item in items {
                    store.write(item).await.unwrap();
                }
            } else {
                store.write_batch(items).await.unwrap();
            }
            write_time += start.elapsed();
            written += take;
        }
        if slot == 0 {
            first_tenth = written as f64 / write_time.as_secs_f64();
        }
        let (a, b) = search_latencies(&store, queries, label, written).await;
        p50[slot] = a;
        p99[slot] = b;
    }
    let write_per_sec = n as f64 / write_time.as_secs_f64();
    println!(
        "{}",
        json!({"bench": "memory", "store": label, "phase": "write", "memories": n, "batch": batch,
               "secs": round(write_time.as_secs_f64(), 3), "memories_per_sec": write_per_sec.round(),
               "memories_per_sec_first_tenth": first_tenth.round()})
    );
    let bytes = file_bytes(&db);
    let bytes_per_memory = bytes as f64 / n as f64;
    println!(
        "{}",
        json!({"bench": "memory", "store": label, "phase": "size", "memories": n, "bytes": bytes,
               "bytes_per_memory": bytes_per_memory.round()})
    );
    println!(
        "{}",
        json!({"bench": "memory", "store": label, "ratio": "search_100k_over_10k",
               "p50": round(p50[1] / p50[0], 2), "p99": round(p99[1] / p99[0], 2)})
    );
    Figures {
        write_per_sec,
        write_per_sec_first_tenth: first_tenth,
        p50,
        p99,
        bytes_per_memory,
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    flag(args, name).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = arg(&args, "--n", 100_000);
    let q: usize = arg(&args, "--queries", 300);
    let dims: usize = arg(&args, "--dims", 384);
    let dir = match arg::<String>(&args, "--dir", String::new()) {
        d if d.is_empty() => tempfile::tempdir().unwrap(),
        d => tempfile::tempdir_in(d).unwrap(),
    };
    let vocab = vocabulary();
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let queries: Vec<String> = (0..q).map(|_| sentence(&mut rng, &vocab, 3)).collect();

    let single: usize = arg(&args, "--bm25-batch", 1);
    let bm25 = run(
        "bm25",
        dir.path().join("bm25.db"),
        StoreOptions::default(),
        n,
        single.max(1),
        &queries,
    )
    .await;
    // Peer: the same single writes with `synchronous=NORMAL`, first tenth only.
    if single <= 1 {
        let options = StoreOptions {
            durability: Durability::ProcessCrash,
            ..StoreOptions::default()
        };
        let store = SqliteStore::open(dir.path().join("normal.db"), options)
            .await
            .unwrap();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let start = Instant::now();
        for _ in 0..n / 10 {
            store
                .write(NewMemory::new(NS, sentence(&mut rng, &vocab, 12)))
                .await
                .unwrap();
        }
        let per_sec = (n / 10) as f64 / start.elapsed().as_secs_f64();
        println!(
            "{}",
            json!({"bench": "memory", "store": "bm25", "durability": "process_crash", "phase": "write",
                   "memories": n / 10, "batch": 1, "memories_per_sec": per_sec.round(),
                   "ratio_over_power_loss": round(per_sec / bm25.write_per_sec_first_tenth, 2)})
        );
    }
    if args.iter().any(|a| a == "--skip-hybrid") {
        return;
    }
    let url = start_embedder(dims).await;
    let embedder = OpenAiEmbedder::new(EmbedderConfig::new(url, format!("hash-{dims}"))).unwrap();
    let hybrid = run(
        "hybrid",
        dir.path().join("hybrid.db"),
        StoreOptions::default().embedder(embedder),
        n,
        500,
        &queries,
    )
    .await;
    println!(
        "{}",
        json!({"bench": "memory", "ratio": "hybrid_over_bm25", "dims": dims,
               "search_p50_10k": round(hybrid.p50[0] / bm25.p50[0], 2),
               "search_p50_100k": round(hybrid.p50[1] / bm25.p50[1], 2),
               "search_p99_100k": round(hybrid.p99[1] / bm25.p99[1], 2),
               "bytes_per_memory": round(hybrid.bytes_per_memory / bm25.bytes_per_memory, 2),
               "batched_writes_per_sec_over_single": round(hybrid.write_per_sec / bm25.write_per_sec, 2)})
    );
}
