import json, os, random, sqlite3, tempfile, time
import airlock

DB = os.path.join(tempfile.mkdtemp(), "run.db")  # one run's journal, kept across crashes
SOURCE = "const a = await shop.charge('o-1', 30); const b = await shop.charge('o-2', 12);" \
         " return [a.id, b.id];"

def durable_run(crash_at=None):
    db = sqlite3.connect(DB)
    db.execute("CREATE TABLE IF NOT EXISTS run (seed INTEGER, clock_ms INTEGER)")
    db.execute("CREATE TABLE IF NOT EXISTS journal (position INTEGER PRIMARY KEY, entry TEXT)")
    with db:  # a journal replays with the seed and clock of the run that wrote it
        if not db.execute("SELECT 1 FROM run").fetchone():
            db.execute("INSERT INTO run VALUES (?, ?)",
                       (random.getrandbits(63), int(time.time() * 1000)))
    seed, clock_ms = db.execute("SELECT seed, clock_ms FROM run").fetchone()
    done = [json.loads(e) for (e,) in db.execute("SELECT entry FROM journal ORDER BY position")]

    def keep(entry):  # committed before the guest sees the answer
        with db:
            db.execute("INSERT INTO journal VALUES (?, ?)",
                       (entry.position, json.dumps(entry.to_dict())))

    def charge(order, amount):
        print("charging", order, flush=True)
        if order == crash_at:
            os._exit(1)  # the process dies in the middle of the run
        return {"id": "ch-" + order, "amount": amount}

    return airlock.Runner().run(SOURCE, host={"shop.charge": charge}, seed=seed,
                                clock_ms=clock_ms, journal=keep, journal_entries=done)

if os.fork() == 0:
    durable_run(crash_at="o-2")  # charges o-1 (journaled), then dies charging o-2
os.wait()
r = durable_run()  # o-1 is answered from the journal; o-2, in doubt, is charged again
print(r.status, r.value)
