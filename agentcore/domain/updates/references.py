"""Reference statements: unrelated everyday sentences on which the update reader measures the
embedder's background (``replacement.Calibration``), so that its bars are relative to the model
in use rather than cosines of one model. Written for this purpose; any set of short, mutually
unrelated statements of the kinds people tell an assistant would do."""

from __future__ import annotations

REFERENCES: tuple[str, ...] = (
    "The weather was lovely on Saturday afternoon.",
    "I had pancakes for breakfast this morning.",
    "The train was delayed by twenty minutes again.",
    "My neighbour's garden has beautiful roses.",
    "We watched a documentary about octopuses last night.",
    "The printer on the second floor is out of toner.",
    "The concert tickets sold out in ten minutes.",
    "I need to return a parcel to the post office.",
    "That restaurant serves the best dumplings in town.",
    "I lost my umbrella on the bus yesterday.",
    "The power went out during the storm.",
    "The library extended its opening hours.",
    "I'm trying to cut down on sugar.",
    "The museum's new exhibit is about ancient Egypt.",
    "Our flight lands at seven in the evening.",
    "The dishwasher is making a weird rattling noise.",
    "I painted the fence over the weekend.",
    "The football match went to penalties.",
    "The server crashed because the disk was full.",
    "The cat knocked a glass off the table.",
    "I finally finished that thousand-page novel.",
    "The bakery was out of sourdough.",
    "There is a farmers market every Sunday in the square.",
    "The meeting ran over by half an hour.",
    "The hotel room had a view of the harbour.",
    "The recipe calls for two cups of flour.",
    "The river flooded the lower fields in spring.",
    "The app keeps logging me out.",
    "The exam results come out in August.",
    "The bridge is closed for repairs this month.",
    "She plays the cello in a local orchestra.",
    "The snow made the roads icy.",
    "Our internet was down for most of the day.",
    "The lecture on black holes was fascinating.",
    "The car needs new brake pads.",
    "The park has a new playground.",
    "Our building's lift is broken again.",
    "The soup needed more salt.",
    "I walked ten thousand steps today.",
    "The spreadsheet formula returns an error.",
)
