//! `a2e-memory-writer DB NAMESPACE COUNT [full|normal]`: writes COUNT
//! memories (0: until killed) to the store at DB, one at a time, and prints
//! each id on its own line as soon as the write is acknowledged. `normal`
//! opens the store with `Durability::ProcessCrash`. Used to test durability and
//! concurrent writers across processes.

use std::io::Write;
use std::process::ExitCode;

use a2e_memory::{Durability, MemoryStore, NewMemory, SqliteStore, StoreOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (db, namespace, count, durability) = match args.as_slice() {
        [db, ns, count] => (db, ns, count, Durability::PowerLoss),
        [db, ns, count, mode] if mode == "full" => (db, ns, count, Durability::PowerLoss),
        [db, ns, count, mode] if mode == "normal" => (db, ns, count, Durability::ProcessCrash),
        _ => {
            eprintln!("usage: a2e-memory-writer DB NAMESPACE COUNT [full|normal]");
            return ExitCode::from(2);
        }
    };
    let Ok(count) = count.parse::<u64>() else {
        eprintln!("COUNT must be a non-negative integer");
        return ExitCode::from(2);
    };
    let options = StoreOptions {
        durability,
        ..StoreOptions::default()
    };
    let store = match SqliteStore::open(db, options).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open {db}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let mut i = 0u64;
    while count == 0 || i < count {
        let memory = NewMemory::new(
            namespace.as_str(),
            format!("note {i} written by process {}", std::process::id()),
        );
        match store.write(memory).await {
            Ok(m) => {
                if writeln!(out, "{}", m.id)
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return ExitCode::FAILURE;
                }
            }
            Err(e) => {
                eprintln!("write {i}: {e}");
                return ExitCode::FAILURE;
            }
        }
        i += 1;
    }
    ExitCode::SUCCESS
}
