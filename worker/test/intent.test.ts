import { describe, expect, it } from "vitest";
import { intentCategories } from "../src/intent";

describe("intentCategories", () => {
  it.each([
    ["What's your phone number?", ["contact"]],
    ["Can I call you?", ["contact"]],
    ["email address", ["contact"]],
    ["Are you open on Sundays?", ["contact"]],
    ["opening hours", ["contact"]],
    ["How much is a blocked drain?", ["pricing"]],
    ["what does it cost", ["pricing"]],
    ["call-out fee", ["pricing"]],
    ["what's the callout charge", ["pricing"]],
    ["can I get a quote", ["pricing"]],
    ["Which suburbs do you service?", ["location"]],
    ["anyone near Richmond", ["location"]],
    ["where are you located", ["location"]],
    ["Book a plumber", ["booking"]],
    ["schedule an appointment", ["booking"]],
    ["How much to book a plumber near me?", ["pricing", "location", "booking"]],
    ["what if I cancel the day before?", ["policy"]],
    ["do I get my deposit back", ["policy"]],
    ["refund?", ["policy"]],
    ["what happens if I'm a no-show", ["policy"]],
    ["is the work guaranteed", ["policy"]],
    ["Can I reschedule, or is there a cancellation fee?", ["pricing", "booking", "policy"]],
    ["cancellations", ["policy"]],
    ["cancer", []],
    ["returning customer", []],
    ["frozen pipes", []],
    ["phoney", []],
    ["bookshelf", []],
  ])("%j -> %j", (question, expected) => {
    expect(intentCategories(question)).toEqual(expected);
  });
});
