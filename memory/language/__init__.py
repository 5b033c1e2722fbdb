"""How Parla reads what people say, by rules, with no model: words and stop words of five
languages, the words of a recall request, dates said in a request and relative dates made
absolute, durable first-person statements, a turn's importance, auto pins, the profile's
subjects and a reminder's time. Imports `parla.kernel` and `parla.records` only."""
