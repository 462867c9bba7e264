/**
 * Which page categories a question leans towards, from its words.
 *
 * A question about a phone number, an email, an address or opening hours leans towards `contact`;
 * prices, costs, fees and quotes towards `pricing`; suburbs and areas towards `location`; booking
 * and appointments towards `booking`; cancelling, deposits, refunds, returns, no-shows, guarantees,
 * warranties and the terms of trade towards `policy` (a salon's cancellation policy and terms of
 * service). Fusion boosts chunks of these categories (fusion.ts).
 * "Call-out" (a fee) is not a call. Categories are the contract's (knowledge.json `categories`,
 * contract.ts; the crawler's rules are helppuff_crawl/web/categories.py).
 */

const INTENTS: ReadonlyArray<readonly [category: string, pattern: RegExp]> = [
  [
    "contact",
    /\b(phone|phones|call(?![-\s]?outs?\b)|calls|calling|ring|number|email|e-mail|emails|address|contact|hours|open|opens|opening|closed|close)\b/iu,
  ],
  ["pricing", /\b(price|prices|pricing|priced|cost|costs|costing|how much|fee|fees|quote|quotes|charge|charges|rates?)\b/iu],
  ["location", /\b(suburb|suburbs|area|areas|near|nearby|located|location|locations|where are you|service area)\b/iu],
  ["booking", /\b(book|books|booking|bookings|appointment|appointments|schedule|scheduling|reschedule)\b/iu],
  [
    "policy",
    /\b(cancel|cancels|cancelled|canceled|cancelling|canceling|cancellation|cancellations|deposit|deposits|refund|refunds|refundable|returns|no[-\s]?shows?|guarantee|guarantees|guaranteed|warranty|warranties|policy|policies|terms)\b/iu,
  ],
];

/** Every category a question can lean towards, in that order. */
export const INTENT_CATEGORIES: readonly string[] = Object.freeze(INTENTS.map(([category]) => category));

/** The categories `question` leans towards (possibly none), in a fixed order. */
export function intentCategories(question: string): string[] {
  return INTENTS.filter(([, pattern]) => pattern.test(question)).map(([category]) => category);
}
