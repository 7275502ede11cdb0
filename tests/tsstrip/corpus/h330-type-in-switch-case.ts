const v = 2 as number; switch (v as 1 | 2) { case 1 as number: return "one"; case 2: return "two" as string } return null
