// The command sees AIRLOCK_FUNCTION.
return await who.am();
