import airlock

def refund(order, amount):
    ctx = airlock.call_context()
    if ctx.resolution is None:  # the first call: ask a person, the run stops here
        airlock.interrupt({"question": "refund %d on %s?" % (amount, order)})
    return {"refunded": order, "amount": amount, "approved_by": ctx.resolution}

SOURCE = "const c = await crm.lookup('c-42'); return await shop.refund(c.order, 30);"
host = {"crm.lookup": lambda cid: {"id": cid, "order": "o-7"}, "shop.refund": refund}
runner = airlock.Runner(limits={"timeout": "5s"}, secret="a secret of at least 32 bytes....")
r = runner.run(SOURCE, host=host, lang="ts")
print(r.status, r.interruptions[0].payload)  # interrupted {'question': 'refund 30 on o-7?'}
done = runner.run(SOURCE, host=host, lang="ts", resume=r.continuation,
                  resolutions={r.interruptions[0].id: "alice"})  # crm.lookup is not called again
print(done.status, done.value)  # completed {'refunded': 'o-7', 'amount': 30, 'approved_by': 'alice'}
