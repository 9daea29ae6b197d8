//! The write decision (`db/rows.rs`, `decide`) as each database stores it: the same writes, on
//! SQLite and on PostgreSQL, answer the same and leave the same rows. Batches hold several writes of
//! one game too (an append then a compaction, an append then a delete, appends on heads old and new),
//! which the server's writer can send in one transaction: each write sees the rows the writes before
//! it left, on both databases, whether PostgreSQL makes the batch in a transaction or, for appends
//! alone, in one statement.

use std::sync::Arc;

use serde_json::json;
use statecraft_engine::{HistoryLimits, StepId, Value};
use statecraft_saves::{
    BaseRecord, CheckoutRecord, Head, Receipt, Spent, Storage, TimelineRecord, Write, Written,
};
use statecraft_server::Database;

// The PostgreSQL set-up every test of the server and the command shares.
use statecraft_test_support::pg_schema::PgSchema;

fn base(hp: i64) -> BaseRecord {
    BaseRecord {
        state: Value::from(json!({ "hp": hp })),
        schema: None,
        scripts: None,
        history: HistoryLimits::default(),
        metadata: serde_json::Map::new(),
        seed: None,
        root_keys: Vec::new(),
        profile: None,
        automatic_schema: None,
        card_fingerprint: None,
        macros: Default::default(),
    }
}

fn head(seq: u64, base_seq: u64, step: u64) -> Head {
    Head {
        seq,
        base_seq,
        step: StepId::new(step),
        label: Some(format!("at {seq}")),
    }
}

/// A record that says which step it is, so that rows read back tell which write made them.
fn record(step: u64) -> TimelineRecord {
    TimelineRecord::Checkout(CheckoutRecord {
        to: StepId::new(step),
    })
}

fn receipt(key: &str, body: &str) -> Receipt {
    Receipt {
        key: key.to_owned(),
        fingerprint: format!("fingerprint of {key}"),
        status: 201,
        body: body.to_owned(),
    }
}

fn create(id: &str, receipt: Option<Receipt>, max_games: Option<u64>) -> Write {
    Write::Create {
        id: id.to_owned(),
        base: base(10),
        scripts: [("a.lua".to_owned(), "-- nothing".to_owned())].into(),
        head: head(0, 0, 0),
        receipt,
        max_games,
    }
}

fn append(id: &str, on: u64, steps: &[u64], receipt: Option<Receipt>) -> Write {
    let last = steps.last().copied().unwrap_or(0);
    Write::Append {
        id: id.to_owned(),
        on,
        records: steps.iter().copied().map(record).collect(),
        head: head(on + steps.len() as u64, 0, last),
        receipt,
    }
}

/// One write alone in its transaction.
fn one(storage: &dyn Storage, write: Write) -> Written {
    let mut results = storage.write(&[write]).expect("the write is made");
    assert_eq!(results.len(), 1);
    results.remove(0)
}

/// A game as loaded: its head, its base's state and its records' steps; `None` when there is none.
fn stored(storage: &dyn Storage, id: &str) -> Option<(Head, serde_json::Value, Vec<u64>)> {
    let game = storage.load(id).expect("the game loads")?;
    let steps = game
        .records
        .iter()
        .map(|record| match record {
            TimelineRecord::Checkout(checkout) => checkout.to.get(),
            other => panic!("a record no write made: {other:?}"),
        })
        .collect();
    Some((game.head, game.base.state.to_json(), steps))
}

/// Every kind of write, each answer and the rows it leaves checked; the same on both databases.
fn every_write_decides_alike(storage: &dyn Storage) {
    // A create, and a second one under the same id.
    assert_eq!(one(storage, create("a", None, None)), Written::Done);
    assert_eq!(one(storage, create("a", None, None)), Written::Exists);
    // An append on the head it was made on, then one on a head that has moved, then on no game.
    let kept = receipt("m1", "{\"step\": 2}");
    assert_eq!(
        one(storage, append("a", 0, &[1, 2], Some(kept.clone()))),
        Written::Done
    );
    assert_eq!(one(storage, append("a", 0, &[9], None)), Written::Conflict);
    assert_eq!(
        one(storage, append("nobody", 0, &[9], None)),
        Written::Missing
    );
    assert_eq!(
        storage.receipt("a", "m1").expect("read"),
        Some(kept.clone())
    );
    assert_eq!(
        stored(storage, "a"),
        Some((head(2, 0, 2), json!({"hp": 10}), vec![1, 2]))
    );
    // A receipt under a key that has one keeps the first.
    let again = Write::Receipt {
        id: "a".to_owned(),
        receipt: receipt("m1", "another answer"),
    };
    assert_eq!(one(storage, again), Written::Done);
    assert_eq!(storage.receipt("a", "m1").expect("read"), Some(kept));

    // The games limit counts the games there are.
    assert_eq!(one(storage, create("b", None, Some(1))), Written::Full);
    assert_eq!(one(storage, create("b", None, Some(2))), Written::Done);
    // A create under a key that made another game makes none.
    let made = receipt("new-1", "{\"id\": \"c\"}");
    assert_eq!(
        one(storage, create("c", Some(made.clone()), None)),
        Written::Done
    );
    assert_eq!(
        one(storage, create("d", Some(receipt("new-1", "{}")), None)),
        Written::Exists
    );
    assert_eq!(stored(storage, "d"), None);
    assert_eq!(storage.count().expect("count"), 3);

    // Appends of several games in one batch, as the server's writer gathers them: each is decided on
    // the head its game has as the appends before it left it, and only the winners' records and
    // receipts are kept. "e" gets two appends in a row and a third on the head it had before them;
    // "f" one on a head it never had, then one on its head.
    assert_eq!(one(storage, create("e", None, None)), Written::Done);
    assert_eq!(one(storage, create("f", None, None)), Written::Done);
    assert_eq!(
        storage
            .write(&[
                append("e", 0, &[1], Some(receipt("m3", "{}"))),
                append("f", 7, &[1], Some(receipt("m4", "{}"))),
                append("e", 1, &[2], None),
                append("nobody", 0, &[1], Some(receipt("m5", "{}"))),
                append("f", 0, &[2], None),
                append("e", 0, &[9], None),
            ])
            .expect("the batch is made"),
        vec![
            Written::Done,
            Written::Conflict,
            Written::Done,
            Written::Missing,
            Written::Done,
            Written::Conflict
        ]
    );
    assert_eq!(
        stored(storage, "e"),
        Some((head(2, 0, 2), json!({"hp": 10}), vec![1, 2]))
    );
    assert_eq!(
        stored(storage, "f"),
        Some((head(1, 0, 2), json!({"hp": 10}), vec![2]))
    );
    assert!(storage.receipt("e", "m3").expect("read").is_some());
    assert_eq!(storage.receipt("f", "m4").expect("read"), None);
    assert_eq!(storage.receipt("nobody", "m5").expect("read"), None);
    for id in ["e", "f"] {
        let delete = Write::Delete {
            id: id.to_owned(),
            spent: None,
        };
        assert_eq!(one(storage, delete), Written::Done);
    }

    // An append and a compaction of what it made, in one transaction: the compaction finds the
    // append's head and drops its records with the others.
    let compact = Write::Compact {
        id: "a".to_owned(),
        on: 3,
        base: base(7),
        records: vec![record(3)],
        head: head(4, 4, 3),
    };
    assert_eq!(
        storage
            .write(&[append("a", 2, &[3], None), compact])
            .expect("the batch is made"),
        vec![Written::Done, Written::Done]
    );
    assert_eq!(
        stored(storage, "a"),
        Some((head(4, 4, 3), json!({"hp": 7}), vec![3]))
    );
    // A compaction on a head that has moved changes nothing.
    let stale = Write::Compact {
        id: "a".to_owned(),
        on: 3,
        base: base(0),
        records: Vec::new(),
        head: head(4, 4, 0),
    };
    assert_eq!(one(storage, stale), Written::Conflict);

    // An append and a delete of its game in one transaction: nothing of the game is left, and a game
    // made again under the id numbers its records after the deleted one's last.
    let delete = Write::Delete {
        id: "b".to_owned(),
        spent: None,
    };
    assert_eq!(
        storage
            .write(&[append("b", 0, &[1], Some(receipt("m2", "{}"))), delete])
            .expect("the batch is made"),
        vec![Written::Done, Written::Done]
    );
    assert_eq!(stored(storage, "b"), None);
    assert_eq!(storage.receipt("b", "m2").expect("read"), None);
    assert_eq!(one(storage, create("b", None, None)), Written::Done);
    let remade = Head {
        label: Some("at 0".to_owned()),
        ..head(2, 2, 0)
    };
    assert_eq!(
        stored(storage, "b"),
        Some((remade, json!({"hp": 10}), Vec::new()))
    );
    assert_eq!(one(storage, append("b", 0, &[1], None)), Written::Conflict);
    assert_eq!(one(storage, append("b", 2, &[1], None)), Written::Done);

    // A delete spends the receipts of the creates that made the game; a second finds no game.
    let spent = Spent {
        made: made.body.clone(),
        status: 410,
        body: "{\"gone\": true}".to_owned(),
    };
    let delete = |spent: Option<Spent>| Write::Delete {
        id: "c".to_owned(),
        spent,
    };
    assert_eq!(one(storage, delete(Some(spent.clone()))), Written::Done);
    assert_eq!(one(storage, delete(None)), Written::Missing);
    let receipt = storage.receipt("", "new-1").expect("read");
    assert_eq!(
        receipt.map(|receipt| (receipt.status, receipt.body)),
        Some((spent.status, spent.body))
    );
    assert_eq!(storage.count().expect("count"), 2);
}

#[test]
fn sqlite_stores_the_write_decision() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let storage: Arc<dyn Storage> = Database::Sqlite(dir.path().join("games.db"))
        .open()
        .expect("the database opens");
    every_write_decides_alike(&*storage);
}

#[test]
fn postgres_stores_the_write_decision() {
    let Some(schema) = PgSchema::new("writes") else {
        return;
    };
    let storage = Database::Postgres(schema.url.clone())
        .open()
        .expect("the database opens");
    every_write_decides_alike(&*storage);
}
