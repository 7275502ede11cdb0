const p: any = Promise.resolve(9); return <number>await p
