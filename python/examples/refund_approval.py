import os, airlock

url = os.environ["AIRLOCK_URL"]  # people and the shop connector exist (see docs/server.md)
author, approver, agent = (airlock.Client(url, os.environ[k])
                           for k in ("AUTHOR_KEY", "APPROVER_KEY", "AGENT_KEY"))
author.create_template("refund", "finance", "refund the first paid order")
v = author.create_version("refund", """
const orders = await shop.orders("paid");
return await shop.refund(orders[0].id, input.amount);
""", functions=["shop.orders", "shop.refund"])["version"]
author.submit("refund", v)
approver.approve_version("refund", v, "checked")  # four eyes: never the author
run = agent.run("refund", {"amount": 30})  # shop.refund is sensitive: the run waits
print(run["status"])  # awaiting_approval
approver.approve(run["approvals"][0], "refund ok")
print(agent.wait_run(run["id"])["value"])  # {'refunded': 'o-1', 'amount': 30}
