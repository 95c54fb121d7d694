//! Following a run on JetStream: an ordered consumer on the run's subjects
//! from the start of the stream, so that the stored events come first and
//! the live ones after them, in publish order; each `seq` is passed on
//! once (a duplicate published after the server's duplicate window is
//! dropped here), and the run's end message closes the stream.

use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use futures::stream::{self, BoxStream, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::nats_err;
use super::read::seq_of;
use super::store::NatsJournal;
use crate::error::{JournalError, Result};
use crate::ids::RunId;
use crate::model::{RunItem, RunStatus, StoredEvent};

#[derive(Deserialize)]
struct End {
    status: String,
    #[serde(default)]
    answer: Value,
}

struct State {
    journal: NatsJournal,
    run: RunId,
    next: u64,
    messages: Option<pull::Ordered>,
    /// Quiet checks that found the run finished without its end message.
    quiet_finished: u32,
    done: bool,
}

/// A run's items from `from` on.
pub(crate) fn follow(
    journal: NatsJournal,
    run: RunId,
    from: u64,
) -> BoxStream<'static, Result<RunItem>> {
    let state = State {
        journal,
        run,
        next: from,
        messages: None,
        quiet_finished: 0,
        done: false,
    };
    stream::unfold(state, |mut st| async move {
        let item = st.next_item().await?;
        Some((item, st))
    })
    .boxed()
}

impl State {
    fn fail(&mut self, e: JournalError) -> Option<Result<RunItem>> {
        self.done = true;
        Some(Err(e))
    }

    async fn open(&mut self) -> Result<Option<()>> {
        if self.journal.status(&self.run).await?.is_none() {
            return Ok(None);
        }
        let filter = self.journal.names().run_filter(&self.run);
        let consumer = self
            .journal
            .events_stream()
            .create_consumer(pull::OrderedConfig {
                filter_subject: filter.clone(),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(|e| nats_err(format!("follow {filter}"), e))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|e| nats_err(format!("follow {filter}"), e))?;
        self.messages = Some(messages);
        Ok(Some(()))
    }

    async fn next_item(&mut self) -> Option<Result<RunItem>> {
        if self.done {
            return None;
        }
        if self.messages.is_none() {
            match self.open().await {
                Ok(Some(())) => {}
                Ok(None) => return self.fail(JournalError::UnknownRun(self.run.to_string())),
                Err(e) => return self.fail(e),
            }
        }
        loop {
            let messages = self.messages.as_mut()?;
            match tokio::time::timeout(NatsJournal::quiet_check(), messages.next()).await {
                Ok(Some(Ok(msg))) => {
                    if msg.subject.as_str().ends_with(".end") {
                        self.done = true;
                        return Some(match serde_json::from_slice::<End>(&msg.payload) {
                            Ok(end) => {
                                match RunStatus::parse(&end.status) {
                                    Some(status) => Ok(RunItem::Finished {
                                        status,
                                        answer: end.answer,
                                    }),
                                    None => Err(self
                                        .corrupt(format!("end: unknown status `{}`", end.status))),
                                }
                            }
                            Err(e) => Err(self.corrupt(format!("end: {e}"))),
                        });
                    }
                    let Some(seq) = seq_of(&msg) else {
                        continue;
                    };
                    if seq < self.next {
                        continue;
                    }
                    self.next = seq.saturating_add(1);
                    return Some(
                        serde_json::from_slice(&msg.payload)
                            .map(|event| RunItem::Event(StoredEvent { seq, event }))
                            .map_err(|e| self.corrupt(format!("event seq {seq}: {e}"))),
                    );
                }
                Ok(Some(Err(e))) => return self.fail(nats_err("follow", e)),
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(_) => {
                    // Quiet: a run whose record says it finished but whose
                    // end message never went out (its host died between
                    // the two) ends here after a second quiet check.
                    match self.journal.status(&self.run).await {
                        Ok(Some((status, answer))) if status.is_finished() => {
                            self.quiet_finished += 1;
                            if self.quiet_finished >= 2 {
                                self.done = true;
                                return Some(Ok(RunItem::Finished {
                                    status,
                                    answer: answer.unwrap_or_default(),
                                }));
                            }
                        }
                        Ok(Some(_)) => self.quiet_finished = 0,
                        Ok(None) => {
                            return self.fail(JournalError::UnknownRun(self.run.to_string()));
                        }
                        Err(e) => return self.fail(e),
                    }
                }
            }
        }
    }

    fn corrupt(&self, message: String) -> JournalError {
        JournalError::Corrupt {
            run_id: self.run.to_string(),
            message,
        }
    }
}
