return await new Promise<void>((resolve) => resolve())
