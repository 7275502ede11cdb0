return await (async (): Promise<string> => "a")()
