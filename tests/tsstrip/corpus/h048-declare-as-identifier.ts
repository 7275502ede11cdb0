let declare = 5; declare += 1; return declare
