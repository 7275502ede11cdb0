return `${await Promise.resolve<number>(1) as number}`
